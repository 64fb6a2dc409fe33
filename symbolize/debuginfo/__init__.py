"""Finding a binary's files: where its debug file, its build-id copy or its
package may be (locate, debuginfod, packages), the kernel's vDSO image
(vdso), and the symbols a binary carries compressed (minidebuginfo).

Stands on symbolize's floor (elffile, buildid, cachedir, errors) and on
nothing in symbolize.symbols or symbolize.unwind.
"""
