"""The ranks of one job: communication per rank, collectives, bandwidth, the job view.
"""
