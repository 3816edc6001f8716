/* Optional compiled kernel of Subset Selection's batch path (ldp/batch/subset_selection.py; clients never load it).
 *
 * floyd_rows(halves, v, own, w, d, rows, start) -> (stop, used):
 *   for each row i >= start: a uniform (w - own[i])-subset of the d - 1 columns other than v[i], by Floyd's
 *   algorithm over their positions 0..d-2 (position t is column t + (t >= v[i])), its bits OR-ed into the
 *   packed little-endian row i of `rows` (n rows of (d + 7) / 8 bytes), then bit v[i] if own[i]. Each draw of Floyd's R(j + 1) takes the next
 *   32-bit value of `halves` masked to bit_length(j) bits and rejects it above j: exactly uniform. When the
 *   values run out inside row i, that row is cleared and (i, values used) returned: the caller resumes at i
 *   with fresh values (the accepted draws are independent of how many were rejected, so restarting a row does
 *   not change its law). Returns (n, used) when every row is done. halves: native uint32; v: int64; own, rows:
 *   uint8; all C-contiguous. Only the buffer protocol is used (no numpy headers); the GIL is released.
 *   Tested against a Python transcription in tests/protocols/test_subset_selection.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

static Py_ssize_t floyd(const uint32_t *halves, Py_ssize_t nh, Py_ssize_t *used, const int64_t *v,
                        const uint8_t *own, int64_t w, Py_ssize_t n, int64_t d, uint8_t *rows, Py_ssize_t start)
{
    Py_ssize_t nb = (Py_ssize_t)((d + 7) / 8), h = *used;
    for (Py_ssize_t i = start; i < n; i++) {
        uint8_t *row = rows + i * nb;
        int64_t vi = v[i];
        for (int64_t j = d - 1 - (w - (own[i] != 0)); j < d - 1; j++) {
            uint32_t t = 0;
            if (j > 0) {
                uint32_t mask = (uint32_t)j; /* all ones up to j's top bit: 2^bit_length(j) - 1 */
                mask |= mask >> 1; mask |= mask >> 2; mask |= mask >> 4; mask |= mask >> 8; mask |= mask >> 16;
                do {
                    if (h == nh) {
                        memset(row, 0, (size_t)nb);
                        *used = h;
                        return i;
                    }
                    t = halves[h++] & mask;
                } while (t > (uint32_t)j);
            }
            int64_t c = (int64_t)t + ((int64_t)t >= vi);
            if (row[c >> 3] >> (c & 7) & 1)
                c = j + (j >= vi);
            row[c >> 3] |= (uint8_t)(1u << (c & 7));
        }
        if (own[i])
            row[vi >> 3] |= (uint8_t)(1u << (vi & 7));
    }
    *used = h;
    return n;
}

static PyObject *floyd_rows(PyObject *self, PyObject *args)
{
    Py_buffer hb, vb, ob, rb;
    long long w, d;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "y*y*y*LLw*n", &hb, &vb, &ob, &w, &d, &rb, &start))
        return NULL;
    Py_ssize_t n = vb.len / 8, used = 0, stop = -1;
    if (d < 2 || d > (1LL << 31) || w < 1 || w > d - 1 || ob.len != n || rb.len != n * ((d + 7) / 8) || start < 0
        || start > n) {
        PyErr_SetString(PyExc_ValueError, "floyd_rows: inconsistent buffer sizes, w or d");
    } else {
        const int64_t *v = (const int64_t *)vb.buf;
        int ok = 1;
        for (Py_ssize_t i = 0; i < n; i++)
            ok &= v[i] >= 0 && v[i] < d;
        if (!ok) {
            PyErr_SetString(PyExc_ValueError, "floyd_rows: a value out of range");
        } else {
            Py_BEGIN_ALLOW_THREADS
            stop = floyd((const uint32_t *)hb.buf, hb.len / 4, &used, v, (const uint8_t *)ob.buf, w, n, d,
                         (uint8_t *)rb.buf, start);
            Py_END_ALLOW_THREADS
        }
    }
    PyBuffer_Release(&hb);
    PyBuffer_Release(&vb);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&rb);
    if (stop < 0)
        return NULL;
    return Py_BuildValue("nn", stop, used);
}

static PyMethodDef methods[] = {
    {"floyd_rows", floyd_rows, METH_VARARGS, "Floyd's subsets around each row's value (see the file's comment)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_sskernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__sskernel(void) { return PyModule_Create(&module); }
