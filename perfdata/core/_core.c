/* perfdata.core._core: the compiled per-sample core (being built). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyMethodDef core_methods[] = {
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef core_module = {
    PyModuleDef_HEAD_INIT, "_core", "perfdata's compiled per-sample core", -1, core_methods,
};

PyMODINIT_FUNC PyInit__core(void) { return PyModule_Create(&core_module); }
