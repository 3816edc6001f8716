/* Optional compiled helper of the ingest service's group commit (server side only; clients never load it).
 *
 * write_synced(fd0, data0, fd1, data1, ...): for each pair in order, write every byte of data to fd (a write may take
 * a part: the rest is written again) and fsync fd; the next pair only after the fsync returned. One release of the
 * GIL for all of it: a group commit's writes and fsyncs from Python take the GIL back after each system call, and
 * each time wait up to the interpreter's switch interval while the event loop thread runs (ldp/ingest/segments.py).
 *
 * Errors: OSError with the failing call's errno, the bytes written before it left in the file (the caller cuts back,
 * as after ldp.jobs.store.write_all). EINTR: the signal handlers run (the GIL taken back for them; an exception
 * they raise is raised) and the call is made again, as Python's own os.write and os.fsync do (PEP 475). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <unistd.h>

#define MAX_PAIRS 8

/* After a call failed with errno: 0 to make it again (EINTR, the signal handlers run with the GIL taken back and
 * none raised), -1 when a handler raised, else the errno to report. */
static int after_failure(PyThreadState **ts)
{
    if (errno != EINTR)
        return errno;
    PyEval_RestoreThread(*ts);
    int failed = PyErr_CheckSignals();
    *ts = PyEval_SaveThread();
    return failed ? -1 : 0;
}

/* errno of the first failure (0: done), with the GIL released around the calls and taken for signal handlers. */
static int write_pairs(const int *fds, Py_buffer *bufs, Py_ssize_t pairs, PyThreadState **ts)
{
    for (Py_ssize_t p = 0; p < pairs; p++) {
        const char *at = (const char *)bufs[p].buf;
        Py_ssize_t left = bufs[p].len;
        while (left > 0) {
            ssize_t got = write(fds[p], at, (size_t)(left < (1 << 30) ? left : (1 << 30)));
            if (got >= 0) {
                at += got, left -= got;
                continue;
            }
            int err = after_failure(ts);
            if (err)
                return err;
        }
        while (fsync(fds[p]) != 0) {
            int err = after_failure(ts);
            if (err)
                return err;
        }
    }
    return 0;
}

static PyObject *write_synced(PyObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs == 0 || nargs % 2 || nargs / 2 > MAX_PAIRS) {
        PyErr_Format(PyExc_TypeError, "write_synced takes 1 to %d (fd, data) pairs, got %zd arguments", MAX_PAIRS,
                     nargs);
        return NULL;
    }
    const Py_ssize_t pairs = nargs / 2;
    int fds[MAX_PAIRS];
    Py_buffer bufs[MAX_PAIRS];
    Py_ssize_t held = 0;
    for (; held < pairs; held++) {
        int fd = PyObject_AsFileDescriptor(args[2 * held]);
        if (fd < 0 || PyObject_GetBuffer(args[2 * held + 1], &bufs[held], PyBUF_SIMPLE) < 0)
            goto fail;
        fds[held] = fd;
    }
    PyThreadState *ts = PyEval_SaveThread();
    int err = write_pairs(fds, bufs, pairs, &ts);
    PyEval_RestoreThread(ts);
    for (Py_ssize_t p = 0; p < pairs; p++)
        PyBuffer_Release(&bufs[p]);
    if (err > 0) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    if (err < 0)
        return NULL; /* a signal handler's exception */
    Py_RETURN_NONE;
fail:
    for (Py_ssize_t p = 0; p < held; p++)
        PyBuffer_Release(&bufs[p]);
    return NULL;
}

static PyMethodDef methods[] = {
    {"write_synced", (PyCFunction)(void (*)(void))write_synced, METH_FASTCALL,
     "write_synced(fd, data, ...): each pair in order, every byte written then fsynced, the GIL released once."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_synckernel",
                                    "Optional compiled helper of the ingest service's group commit.", -1, methods};

PyMODINIT_FUNC PyInit__synckernel(void) { return PyModule_Create(&module); }
