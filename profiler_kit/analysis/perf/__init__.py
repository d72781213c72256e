"""How fast the work runs against the hardware: FLOPs and bytes per op, roofline, device specs,
precision and tensor cores.
"""
