"""Where the time goes: GPU busy and idle, launches, idle causes, phases, hotspots, the
critical path, one step as lanes.
"""
