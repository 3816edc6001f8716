/* Optional compiled kernel of the JSONL fast path (ldp/jobs/jsonl.py) and of the shuffler's permutation
 * (ldp/pipeline/shuffle.py); clients never load it.
 *
 * match(chunk, starts, ends, n, programs, key_at, which, nums, width_nums, bits, width_bits):
 *   for each line i < n (bytes chunk[starts[i]:ends[i]], int64 offsets), find the template whose prefix
 *   it starts with and run that template's program over the whole line; when every step holds and the
 *   program ends exactly at the line's end, which[i] = the template's index, its numbers are
 *   nums[i, 0..] (uint64, the window first) and its bit strings bits[i, ..] (packed little-endian: char j
 *   of a field is bit j % 8 of its byte j / 8); otherwise which[i] = -1 (the line is for the full parser).
 *
 * programs: uint32 count, then per template uint32 length and its program, a list of steps:
 *   'L' uint16 len, bytes   the literal bytes, exactly (the first step: the prefix, key_at + 8 <= len)
 *   'N' uint8 most, uint64 bound
 *                           a decimal of 1..most digits (most <= 19), no leading zero unless it is "0",
 *                           value < bound; stored in the next column of nums
 *   'B' uint32 size         size characters each '0' or '1'; packed into the next ceil(size / 8) bytes of bits
 * (integers little-endian). Lines are routed by the 8 bytes at key_at, then the prefix compared in full
 * (two metrics' names may share their first 8 bytes).
 * The same rule as ldp.jobs.jsonl._match_one, line by line; tested against it in
 * tests/jobs/test_line_kernel.py. Only the buffer protocol is used (no numpy headers); the GIL is
 * released while matching many lines (RELEASE_LINES) and while permuting.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Lines from which match releases the GIL: below, the matching takes less than the wait to take the GIL back
 * when another thread runs Python (up to sys.getswitchinterval(), 5 ms): an upload of 500 lines is matched in
 * ~30 us, and releasing there held the ingest service's event loop back behind its writer threads. */
#define RELEASE_LINES 65536

typedef struct {
    const unsigned char *prog;
    Py_ssize_t len;
    uint64_t key;
} Template;

static inline uint64_t load64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline uint32_t load32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 1 when the line [p, end) runs through the program; numbers and bits written as it goes */
static int run(const unsigned char *prog, Py_ssize_t plen, const unsigned char *p, const unsigned char *end,
               uint64_t *nums, unsigned char *bits)
{
    Py_ssize_t at = 0;
    while (at < plen) {
        unsigned char op = prog[at++];
        if (op == 'L') {
            Py_ssize_t len = (Py_ssize_t)prog[at] | (Py_ssize_t)prog[at + 1] << 8;
            at += 2;
            if (end - p < len || memcmp(p, prog + at, (size_t)len) != 0)
                return 0;
            p += len;
            at += len;
        } else if (op == 'N') {
            int most = prog[at];
            uint64_t bound = 0;
            for (int b = 7; b >= 0; b--)
                bound = bound << 8 | prog[at + 1 + b];
            at += 9;
            int k = 0;
            while (k <= most && p + k < end && p[k] >= '0' && p[k] <= '9')
                k++;
            if (k == 0 || k > most || (k > 1 && p[0] == '0'))
                return 0;
            uint64_t v = 0;
            for (int j = 0; j < k; j++)
                v = v * 10 + (uint64_t)(p[j] - '0');
            if (v >= bound)
                return 0;
            *nums++ = v;
            p += k;
        } else { /* 'B' */
            Py_ssize_t size = (Py_ssize_t)load32(prog + at);
            at += 4;
            if (end - p < size)
                return 0;
            Py_ssize_t bytes = (size + 7) / 8;
            memset(bits, 0, (size_t)bytes);
            for (Py_ssize_t j = 0; j < size; j++) {
                unsigned char c = p[j];
                if ((c & 0xFE) != '0')
                    return 0;
                bits[j >> 3] |= (unsigned char)((c & 1) << (j & 7));
            }
            bits += bytes;
            p += size;
        }
    }
    return p == end;
}

/* checks a program's steps are whole and its prefix covers the key; 0 when malformed */
static int valid_program(const unsigned char *prog, Py_ssize_t plen, Py_ssize_t key_at, Py_ssize_t width_nums,
                         Py_ssize_t width_bits)
{
    Py_ssize_t at = 0, nums = 0, bits = 0;
    int first = 1;
    while (at < plen) {
        unsigned char op = prog[at++];
        if (op == 'L') {
            if (plen - at < 2)
                return 0;
            Py_ssize_t len = (Py_ssize_t)prog[at] | (Py_ssize_t)prog[at + 1] << 8;
            if (plen - at - 2 < len || (first && len < key_at + 8))
                return 0;
            at += 2 + len;
        } else if (op == 'N') {
            if (first || plen - at < 9 || prog[at] < 1 || prog[at] > 19)
                return 0;
            at += 9;
            nums++;
        } else if (op == 'B') {
            if (first || plen - at < 4)
                return 0;
            bits += ((Py_ssize_t)load32(prog + at) + 7) / 8;
            at += 4;
        } else {
            return 0;
        }
        first = 0;
    }
    return !first && nums <= width_nums && bits <= width_bits;
}

static PyObject *match(PyObject *self, PyObject *args)
{
    Py_buffer chunk, starts, ends, programs, which, nums, bits;
    Py_ssize_t n, key_at, width_nums, width_bits;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*ny*nw*w*nw*n", &chunk, &starts, &ends, &n, &programs, &key_at, &which,
                          &nums, &width_nums, &bits, &width_bits))
        return NULL;
    PyObject *res = NULL;
    Template *ts = NULL;
    const unsigned char *pg = (const unsigned char *)programs.buf;
    Py_ssize_t count = programs.len >= 4 ? (Py_ssize_t)load32(pg) : -1;
    if (n < 0 || key_at < 0 || width_nums < 1 || width_bits < 0 || starts.len < n * 8 || ends.len < n * 8 ||
        which.len < n * 4 || nums.len < n * width_nums * 8 || bits.len < n * width_bits || count < 0) {
        PyErr_SetString(PyExc_ValueError, "match: bad sizes (int64 starts and ends of n entries, int32 which, "
                        "uint64 nums of n * width_nums, uint8 bits of n * width_bits)");
        goto done;
    }
    ts = PyMem_Malloc(sizeof(Template) * (size_t)(count ? count : 1));
    if (ts == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t at = 4;
    for (Py_ssize_t t = 0; t < count; t++) {
        if (programs.len - at < 4) {
            PyErr_SetString(PyExc_ValueError, "match: programs truncated");
            goto done;
        }
        Py_ssize_t len = (Py_ssize_t)load32(pg + at);
        at += 4;
        if (programs.len - at < len || !valid_program(pg + at, len, key_at, width_nums, width_bits)) {
            PyErr_Format(PyExc_ValueError, "match: program %zd is malformed", t);
            goto done;
        }
        ts[t].prog = pg + at;
        ts[t].len = len;
        ts[t].key = load64(pg + at + 3 + key_at);
        at += len;
    }
    const int64_t *s = (const int64_t *)starts.buf, *e = (const int64_t *)ends.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < 0 || e[i] < s[i] || e[i] > chunk.len) {
            PyErr_Format(PyExc_ValueError, "match: line %zd is outside the chunk", i);
            goto done;
        }
    }
    {
        const unsigned char *c = (const unsigned char *)chunk.buf;
        int32_t *w = (int32_t *)which.buf;
        uint64_t *out = (uint64_t *)nums.buf;
        unsigned char *b = (unsigned char *)bits.buf;
        PyThreadState *state = n >= RELEASE_LINES ? PyEval_SaveThread() : NULL;
        for (Py_ssize_t i = 0; i < n; i++) {
            const unsigned char *p = c + s[i], *end = c + e[i];
            w[i] = -1;
            if (end - p < key_at + 8)
                continue;
            uint64_t key = load64(p + key_at);
            for (Py_ssize_t t = 0; t < count; t++) {
                Py_ssize_t plen = (Py_ssize_t)ts[t].prog[1] | (Py_ssize_t)ts[t].prog[2] << 8;
                if (ts[t].key != key || end - p < plen || memcmp(p, ts[t].prog + 3, (size_t)plen) != 0)
                    continue;
                if (run(ts[t].prog, ts[t].len, p, end, out + i * width_nums, b + i * width_bits))
                    w[i] = (int32_t)t;
                break; /* no other prefix fits: each ends with its metric's name and closing quote */
            }
        }
        if (state != NULL)
            PyEval_RestoreThread(state);
    }
    res = Py_None;
    Py_INCREF(res);
done:
    PyMem_Free(ts);
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&programs);
    PyBuffer_Release(&which);
    PyBuffer_Release(&nums);
    PyBuffer_Release(&bits);
    return res;
}

/* junk(chunk, starts, ends, n, maybe_json, json_space, space, number, word_length, max_line, out):
 * out[i] = 1 when line i (chunk[starts[i]:ends[i]]) is surely not JSON by ldp.jobs.junk.junk_lines's rule,
 * line by line; the byte tables come from there (maybe_json: 256 x 256 uint8 indexed [first][last]; json_space,
 * space, number: 256 uint8; word_length: 256 int64). Tested against the numpy rule. */
static PyObject *junk(PyObject *self, PyObject *args)
{
    Py_buffer chunk, starts, ends, maybe_json, json_space, space, number, word_length, out;
    Py_ssize_t n, max_line;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*ny*y*y*y*y*nw*", &chunk, &starts, &ends, &n, &maybe_json, &json_space,
                          &space, &number, &word_length, &max_line, &out))
        return NULL;
    PyObject *res = NULL;
    const unsigned char *c = (const unsigned char *)chunk.buf, *mj = (const unsigned char *)maybe_json.buf;
    const unsigned char *js = (const unsigned char *)json_space.buf, *sp = (const unsigned char *)space.buf;
    const unsigned char *num = (const unsigned char *)number.buf;
    const int64_t *wl = (const int64_t *)word_length.buf;
    const int64_t *st = (const int64_t *)starts.buf, *en = (const int64_t *)ends.buf;
    unsigned char *o = (unsigned char *)out.buf;
    if (n < 0 || starts.len < n * 8 || ends.len < n * 8 || out.len < n || maybe_json.len != 65536 ||
        json_space.len != 256 || space.len != 256 || number.len != 256 || word_length.len != 256 * 8) {
        PyErr_SetString(PyExc_ValueError, "junk: bad sizes");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (st[i] < 0 || en[i] < st[i] || en[i] >= chunk.len) { /* each line ends in a newline */
            PyErr_Format(PyExc_ValueError, "junk: line %zd is outside the chunk", i);
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t s = st[i], e = en[i];
        o[i] = 0;
        if (e - s <= 0 || e - s > max_line)
            continue;
        int encoded = c[s + 1] == 0;
        if (js[c[s]] && s + 1 < e)
            s++;
        if (js[c[e - 1]] && e - 1 > s)
            e--;
        unsigned char first = c[s], last = c[e - 1];
        int junk = !mj[first * 256 + last] && !encoded;
        if (junk && (first == '{' || first == '[') && memchr(c + s, '}', (size_t)(e - s)) != NULL)
            junk = 0;
        if (!junk && !sp[last]) {
            if (wl[first] > 0) {
                if (e - s != wl[first])
                    junk = 1;
            } else if (num[first] && c[s + 1] != 'I') {
                for (int64_t j = s; j < e; j++) {
                    if (!num[c[j]]) {
                        junk = 1;
                        break;
                    }
                }
            }
        }
        o[i] = (unsigned char)junk;
    }
    res = Py_None;
    Py_INCREF(res);
done:
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&maybe_json);
    PyBuffer_Release(&json_space);
    PyBuffer_Release(&space);
    PyBuffer_Release(&number);
    PyBuffer_Release(&word_length);
    PyBuffer_Release(&out);
    return res;
}

/* split(chunk, starts, ends): the lines of chunk (each ending in '\n'; as many entries as newlines): line i
 * is chunk[starts[i]:ends[i]], without its '\n' and a '\r' before it (int64 offsets, written in place) */
static PyObject *split(PyObject *self, PyObject *args)
{
    Py_buffer chunk, starts, ends;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*w*w*", &chunk, &starts, &ends))
        return NULL;
    PyObject *res = NULL;
    const char *c = (const char *)chunk.buf, *p = c, *stop = c + chunk.len;
    int64_t *s = (int64_t *)starts.buf, *e = (int64_t *)ends.buf;
    Py_ssize_t room = starts.len / 8 < ends.len / 8 ? starts.len / 8 : ends.len / 8, n = 0;
    while (p < stop) {
        const char *nl = memchr(p, '\n', (size_t)(stop - p));
        if (nl == NULL)
            break;
        if (n == room) {
            PyErr_SetString(PyExc_ValueError, "split: more lines than entries");
            goto done;
        }
        s[n] = p - c;
        e[n] = (nl > p && nl[-1] == '\r') ? nl - 1 - c : nl - c;
        n++;
        p = nl + 1;
    }
    res = PyLong_FromSsize_t(n);
done:
    PyBuffer_Release(&chunk);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    return res;
}

/* permute(data, starts, ends, order, n, out): out = the lines data[starts[order[k]]:ends[order[k]]] for k < n,
 * one after the other (int64 offsets, ends exclusive; out as long as their sum) */
static PyObject *permute(PyObject *self, PyObject *args)
{
    Py_buffer data, starts, ends, order, out;
    Py_ssize_t n;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*y*y*y*nw*", &data, &starts, &ends, &order, &n, &out))
        return NULL;
    PyObject *res = NULL;
    const int64_t *s = (const int64_t *)starts.buf, *e = (const int64_t *)ends.buf, *o = (const int64_t *)order.buf;
    if (n < 0 || starts.len < n * 8 || ends.len < n * 8 || order.len < n * 8) {
        PyErr_SetString(PyExc_ValueError, "permute: bad sizes (int64 starts, ends and order of n entries)");
        goto done;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t i = o[k];
        if (i < 0 || i >= n || s[i] < 0 || e[i] < s[i] || e[i] > data.len) {
            PyErr_Format(PyExc_ValueError, "permute: entry %zd is outside the lines or the data", k);
            goto done;
        }
        total += (Py_ssize_t)(e[i] - s[i]);
    }
    if (total != out.len) {
        PyErr_Format(PyExc_ValueError, "permute: the lines hold %zd bytes, the output %zd", total, out.len);
        goto done;
    }
    {
        const char *d = (const char *)data.buf;
        char *w = (char *)out.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t k = 0; k < n; k++) {
            int64_t i = o[k];
            memcpy(w, d + s[i], (size_t)(e[i] - s[i]));
            w += e[i] - s[i];
        }
        Py_END_ALLOW_THREADS
    }
    res = Py_None;
    Py_INCREF(res);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&order);
    PyBuffer_Release(&out);
    return res;
}

static PyMethodDef methods[] = {
    {"match", match, METH_VARARGS, "Match upload lines against their templates (see the module source)."},
    {"junk", junk, METH_VARARGS, "Lines that are surely not JSON (see the module source)."},
    {"split", split, METH_VARARGS, "Line offsets of a chunk (see the module source)."},
    {"permute", permute, METH_VARARGS, "Write lines in a given order (see the module source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_linekernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit__linekernel(void) { return PyModule_Create(&module); }
