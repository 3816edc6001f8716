/* Optional compiled kernel of association analysis's EM (ldp/batch/association.py; clients never load it).
 *
 * pair_step(m, lb, ia, ib, counts, j, ra, rb, d, g) -> loglik
 *   for every pair t < j, with a = ia[t], b = ib[t], n = counts[t]:
 *     D = sum_v m[a, v] * lb[b, v]           (the pair's likelihood under the table: m = L_A pi)
 *     loglik += n * log(D)
 *     g[a, :] += (n / D) * lb[b, :]          (g = W L_B, W the sparse matrix of n / D)
 *   m: float64 (ra, d), lb: float64 (rb, d), g: float64 (ra, d), zeroed by the caller; ia, ib: int64 (j);
 *   counts: float64 (j); all C-contiguous. Pairs with n = 0 are skipped; a pair with n > 0 and D <= 0
 *   makes loglik -inf (the caller's likelihoods are positive, so this only flags a bug or an underflow).
 *
 * This fuses the gather, the row-wise dot product and the sparse product of the numpy path into one pass
 * over the pairs, so each pair's rows are read once from cache instead of being copied into (j, d) arrays
 * (the numpy path is memory-bound: about 0.5 s per map at a million pairs of 100 values). The dot product
 * keeps four partial sums (so the compiler can pipeline it); it therefore differs from numpy's sum in the
 * last bits only, which tests/results/test_association.py checks against the numpy path. Only the buffer protocol
 * is used (no numpy headers); every index is checked before any write; the GIL is released meanwhile.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
/* one build for every x86-64: an x86-64-v3 clone (AVX2 and FMA) chosen at load time where the CPU has it */
__attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
static double step(const double *m, const double *lb, const int64_t *ia, const int64_t *ib, const double *counts,
                   Py_ssize_t j, Py_ssize_t d, double *g)
{
    double loglik = 0.0;
    for (Py_ssize_t t = 0; t < j; t++) {
        double n = counts[t];
        if (n == 0.0)
            continue;
        const double *x = m + ia[t] * d, *y = lb + ib[t] * d;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        Py_ssize_t v = 0;
        for (; v + 4 <= d; v += 4) {
            s0 += x[v] * y[v];
            s1 += x[v + 1] * y[v + 1];
            s2 += x[v + 2] * y[v + 2];
            s3 += x[v + 3] * y[v + 3];
        }
        for (; v < d; v++)
            s0 += x[v] * y[v];
        double lik = (s0 + s1) + (s2 + s3);
        if (!(lik > 0.0)) {
            loglik = -INFINITY;
            continue;
        }
        loglik += n * log(lik);
        double w = n / lik;
        double *out = g + ia[t] * d;
        for (v = 0; v < d; v++)
            out[v] += w * y[v];
    }
    return loglik;
}

static int bad_index(const int64_t *idx, Py_ssize_t j, Py_ssize_t limit)
{
    for (Py_ssize_t t = 0; t < j; t++)
        if (idx[t] < 0 || idx[t] >= limit)
            return 1;
    return 0;
}

static PyObject *pair_step(PyObject *self, PyObject *args)
{
    Py_buffer m, lb, ia, ib, c, g;
    Py_ssize_t j, ra, rb, d;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*nnnnw*", &m, &lb, &ia, &ib, &c, &j, &ra, &rb, &d, &g))
        return NULL;
    PyObject *res = NULL;
    if (j < 0 || ra < 0 || rb < 0 || d < 0 || m.len < ra * d * 8 || g.len < ra * d * 8 || lb.len < rb * d * 8 ||
        ia.len < j * 8 || ib.len < j * 8 || c.len < j * 8) {
        PyErr_SetString(PyExc_ValueError, "pair_step: bad sizes (float64 m and g of ra*d, lb of rb*d; int64 ia, ib "
                        "and float64 counts of j entries)");
    } else if (bad_index((const int64_t *)ia.buf, j, ra) || bad_index((const int64_t *)ib.buf, j, rb)) {
        PyErr_SetString(PyExc_ValueError, "pair_step: a pair's row index is out of range");
    } else {
        double loglik;
        Py_BEGIN_ALLOW_THREADS
        loglik = step((const double *)m.buf, (const double *)lb.buf, (const int64_t *)ia.buf,
                      (const int64_t *)ib.buf, (const double *)c.buf, j, d, (double *)g.buf);
        Py_END_ALLOW_THREADS
        res = PyFloat_FromDouble(loglik);
    }
    PyBuffer_Release(&m);
    PyBuffer_Release(&lb);
    PyBuffer_Release(&ia);
    PyBuffer_Release(&ib);
    PyBuffer_Release(&c);
    PyBuffer_Release(&g);
    return res;
}

static PyMethodDef methods[] = {
    {"pair_step", pair_step, METH_VARARGS, "One pass of association's EM over the report pairs (see the source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_emkernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__emkernel(void) { return PyModule_Create(&module); }
