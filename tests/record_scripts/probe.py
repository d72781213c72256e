"""Prints what a script sees of how it was started (no torch), reads stdin, exits with 3."""

import json
import os
import sys

if __name__ == "__main__":
    data = sys.stdin.read()
    print(json.dumps({"name": __name__, "argv": sys.argv, "path0": sys.path[0],
                      "file": __file__, "cwd": os.getcwd(), "stdin": data,
                      "main_is_me": sys.modules["__main__"].__dict__ is globals()}))
    sys.exit(3)
