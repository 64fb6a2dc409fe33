"""`python -m perfdata`: the perfdata command (perfdata.cli)."""
from perfdata.cli import run

if __name__ == "__main__":
    run()
