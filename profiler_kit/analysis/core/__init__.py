"""The event table's shared vocabulary: arrays and intervals, op and kernel classes, steps, the
op tree, which op launched which kernel.
"""
