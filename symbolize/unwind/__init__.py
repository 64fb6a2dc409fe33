"""Unwinding a stack: DWARF call frame information (cfi), the register
sets of each machine (arch) and the unwinder that steps frame by frame
(unwinder).

Stands on symbolize's floor (elffile, addresses, errors) and on nothing in
symbolize.debuginfo or symbolize.symbols.
"""
