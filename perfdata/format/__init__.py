# Before any schema imports construct: its debugger's modules and two of its
# rarely used classes' are imported only if used (deferred.py says why).
from .deferred import defer_modules

defer_modules("pdb", "inspect", "traceback", "pickle", "hashlib")
