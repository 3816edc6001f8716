/* Optional compiled kernel of Projective Geometry Response's decoder (ldp/batch/projective_geometry.py; clients
 * never load it).
 *
 * hyperplane_counts(y, q, t, out):
 *   out[v] = sum of y[u] over the points u of PG(t-1, q) with <u, v> = 0, for every point v (P_t = (q^t-1)/(q-1)
 *   of them, in the client's numbering), by the recursion of ldp/batch/projective_geometry.py's docstring:
 *   the coordinates move one at a time from the reports' side to the values' side, tables indexed by
 *   (prefix E, suffix S, partial dot product z), E and S zero or canonical. O(P_t q t) additions.
 *
 * y, out: int64, P_t entries each, C-contiguous; q prime in [2, 65521] (the caller checks primality); t >= 2.
 * Only the buffer protocol is used (no numpy headers); the GIL is released. Tested against the numpy recursion
 * and the direct sums in tests/protocols/test_projective_geometry.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* P_m = (q^m - 1)/(q - 1), or -1 past 2^40 */
static int64_t points(int64_t q, int m)
{
    int64_t p = 0;
    for (int i = 0; i < m; i++) {
        p = p * q + 1;
        if (p > (1LL << 40))
            return -1;
    }
    return p;
}

/* the m coordinates of point `index` of PG(m-1, q) into digits[0..m) */
static void point_digits(int64_t index, int64_t q, int m, int64_t *digits)
{
    int lead = m - 1;
    int64_t size = 1;
    while (index >= size) {
        index -= size;
        lead--;
        size *= q;
    }
    for (int j = 0; j < m; j++)
        digits[j] = 0;
    digits[lead] = 1;
    for (int j = m - 1; j > lead; j--) {
        digits[j] = index % q;
        index /= q;
    }
}

/* src[S * (q - 1) + (b - 1)] = 1 + P_m + rho(b * s) for each suffix S of length m (0: the zero vector) */
static int64_t *suffix_sources(int64_t q, int m)
{
    int64_t pm = points(q, m);
    int64_t *src = malloc((size_t)(pm + 1) * (size_t)(q - 1) * sizeof(int64_t));
    int64_t *digits = malloc((size_t)(m > 0 ? m : 1) * sizeof(int64_t));
    if (!src || !digits) {
        free(src);
        free(digits);
        return NULL;
    }
    for (int64_t s = 0; s <= pm; s++) {
        if (s == 0)
            memset(digits, 0, (size_t)(m > 0 ? m : 1) * sizeof(int64_t));
        else
            point_digits(s - 1, q, m, digits);
        for (int64_t b = 1; b < q; b++) {
            int64_t rho = 0;
            for (int j = 0; j < m; j++)
                rho = rho * q + digits[j] * b % q;
            src[s * (q - 1) + (b - 1)] = 1 + pm + rho;
        }
    }
    free(digits);
    return src;
}

static int64_t inverse(int64_t a, int64_t q)
{
    int64_t r = 1, e = q - 2;
    a %= q;
    while (e > 0) {
        if (e & 1)
            r = r * a % q;
        a = a * a % q;
        e >>= 1;
    }
    return r;
}

/* 0 on success, -1 when out of memory */
static int counts(const int64_t *y, int64_t q, int t, int64_t *out)
{
    int64_t biggest = 0;
    for (int l = 1; l < t; l++) {
        int64_t size = (points(q, l) + 1) * (points(q, t - l) + 1) * q;
        if (size > biggest)
            biggest = size;
    }
    int64_t *g = calloc((size_t)biggest, sizeof(int64_t)), *n = calloc((size_t)biggest, sizeof(int64_t));
    int64_t *inv = malloc((size_t)q * sizeof(int64_t));
    int64_t *src = suffix_sources(q, t - 1);
    if (!g || !n || !inv || !src) {
        free(g);
        free(n);
        free(inv);
        free(src);
        return -1;
    }
    for (int64_t a = 1; a < q; a++)
        inv[a] = inverse(a, q);

    /* step 1, from y: G_0(S, z) = y'(S) [z = 0], y' = (0, y); prefixes c = 0 and c = 1 */
    int64_t pm = points(q, t - 1), width = pm + 1;
    for (int64_t s = 0; s <= pm; s++) {
        int64_t *d0 = g + s * q, *d1 = g + (width + s) * q;
        int64_t own = s ? y[s - 1] : 0;
        d0[0] += own;
        d1[0] += own;
        const int64_t *row = src + s * (q - 1);
        for (int64_t b = 1; b < q; b++) {
            int64_t val = y[row[b - 1] - 1];
            d0[0] += val;         /* b z - 0 = 0 at z = 0 */
            d1[inv[b]] += val;    /* b z - 1 = 0 at z = 1/b */
        }
    }
    free(src);

    /* the middle steps */
    for (int l = 1; l < t - 1; l++) {
        int m = t - l - 1;
        int64_t pl = points(q, l), pmm = points(q, m), in_width = points(q, m + 1) + 1, out_width = pmm + 1;
        src = suffix_sources(q, m);
        if (!src) {
            free(g);
            free(n);
            free(inv);
            return -1;
        }
        for (int64_t e = 0; e <= pl; e++) {
            int64_t cs = e ? q : 2;
            for (int64_t c = 0; c < cs; c++) {
                int64_t e2 = e ? 2 + q * (e - 1) + c : c;
                for (int64_t s = 0; s <= pmm; s++) {
                    int64_t *dst = n + (e2 * out_width + s) * q;
                    memcpy(dst, g + (e * in_width + s) * q, (size_t)q * sizeof(int64_t));
                    const int64_t *row = src + s * (q - 1);
                    for (int64_t b = 1; b < q; b++) {
                        const int64_t *from = g + (e * in_width + row[b - 1]) * q;
                        int64_t k = (q - c) % q;
                        for (int64_t z = 0; z < q; z++) {
                            dst[z] += from[k];
                            k += b;
                            if (k >= q)
                                k -= q;
                        }
                    }
                }
            }
        }
        free(src);
        int64_t *swap = g;
        g = n;
        n = swap;
    }

    /* the last step: G_t((v, c)) = G(v, 0, 0) + (q - 1) G(v, (1), -c), divided by q - 1 */
    int64_t total = points(q, t);
    for (int64_t i = 0; i < total; i++) {
        int64_t e2 = i + 1, e, c;
        if (e2 == 1) {
            e = 0;
            c = 1;
        } else {
            e = 1 + (e2 - 2) / q;
            c = (e2 - 2) % q;
        }
        const int64_t *base = g + e * 2 * q;
        out[i] = (base[0] + (q - 1) * base[q + (q - c) % q]) / (q - 1);
    }
    free(g);
    free(n);
    free(inv);
    return 0;
}

static PyObject *hyperplane_counts(PyObject *self, PyObject *args)
{
    Py_buffer yb, ob;
    long long q;
    int t;
    if (!PyArg_ParseTuple(args, "y*Liw*", &yb, &q, &t, &ob))
        return NULL;
    int64_t total = (q >= 2 && q <= 65521 && t >= 2 && t <= 40) ? points(q, t) : -1;
    if (total < 0 || yb.len != total * 8 || ob.len != total * 8) {
        PyBuffer_Release(&yb);
        PyBuffer_Release(&ob);
        PyErr_SetString(PyExc_ValueError, "hyperplane_counts: q, t or the buffer sizes are inconsistent");
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = counts((const int64_t *)yb.buf, q, t, (int64_t *)ob.buf);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&yb);
    PyBuffer_Release(&ob);
    if (rc < 0)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"hyperplane_counts", hyperplane_counts, METH_VARARGS,
     "hyperplane_counts(y, q, t, out): out[v] = sum of y[u] over the points u orthogonal to v, for every v."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_pgkernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__pgkernel(void) { return PyModule_Create(&module); }
