/* The serving scheduler's GPU step executor (serve_gpu.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/kv_pages.h"
#include "engine/mix64.h"
#include "engine/model.h"
#include "engine/serve_gpu.h"

#define BUCKETS 20 /* decode-only graphs for 1, 2, 4, ... 2^19 rows */

typedef struct history {
    int *tokens; /* emitted, in order */
    int n, cap;
    int input_len; /* known from the first emission (the prefill that completes the prompt); 0 before */
} history;

typedef struct step_arrays { /* one step's inputs, host (pinned) or device, all max_rows (the table max_rows × W) */
    int *tokens, *positions, *table, *seq_lens, *out_rows, *out_tokens;
    int64_t *slots;
} step_arrays;

typedef struct graph_slot {
    int warmed; /* the bucket ran once outside a capture (the GEMM picks are made) */
    int width;  /* the table width it was captured with */
    cudaGraphExec_t exec;
} graph_slot;

struct pl_serve_gpu {
    pl_model M;
    pl_layer_recipe recipe;
    cudaStream_t stream;
    uint64_t seed;
    int pages, scratch_page;
    size_t table_cap; /* ints the table arrays hold (grown on demand: decode rows × the step's table width) */
    step_arrays h, d;
    int *starts; /* the step's prompts' starts, host */
    history *hist;
    int n_hist;
    pl_serve_gpu *owner; /* whose request histories it reads and records (itself, or the executor it shares with) */
    int device;
    int *last, last_cap;
    graph_slot graphs[BUCKETS];
};

/* ---- requests' tokens ---- */

/* Request `req`'s prompt token at `pos` under `seed`, in [0, vocab). */
static int prompt_token(uint64_t seed, int req, int pos, int vocab)
{
    const uint64_t z = pl_mix64(seed * 0x9e3779b97f4a7c15ull + ((uint64_t)(uint32_t)req << 32 | (uint32_t)pos) +
                                0x632be59bd9b4e019ull);
    return (int)(z % (uint64_t)vocab);
}

static history *hist_of(pl_serve_gpu *g, int req)
{
    g = g->owner;
    if (req < 0)
        return NULL;
    if (req >= g->n_hist) {
        int n = g->n_hist ? g->n_hist : 64;
        while (n <= req)
            n *= 2;
        history *h = realloc(g->hist, (size_t)n * sizeof *h);
        if (!h)
            return NULL;
        memset(h + g->n_hist, 0, (size_t)(n - g->n_hist) * sizeof *h);
        g->hist = h, g->n_hist = n;
    }
    return &g->hist[req];
}

/* The token at position pos of request req: its prompt's, or one it emitted. -1 when it is not known (a bug). */
static int token_at(pl_serve_gpu *g, int req, int pos)
{
    const history *h = hist_of(g, req);
    if (!h)
        return -1;
    if (h->input_len == 0 || pos < h->input_len)
        return prompt_token(g->seed, req, pos, g->M.config->vocab);
    return pos - h->input_len < h->n ? h->tokens[pos - h->input_len] : -1;
}

static int record(pl_serve_gpu *g, const pl_serve_work *w, int token)
{
    history *h = hist_of(g, w->req);
    if (!h)
        return -1;
    if (h->input_len == 0)
        h->input_len = w->start + w->tokens;
    if (w->start + w->tokens - h->input_len < h->n)
        return 0; /* a recompute's emission of a token it already has (the scheduler does not ask for one) */
    if (h->n == h->cap) {
        const int cap = h->cap ? 2 * h->cap : 64;
        int *t = realloc(h->tokens, (size_t)cap * sizeof *t);
        if (!t)
            return -1;
        h->tokens = t, h->cap = cap;
    }
    h->tokens[h->n++] = token;
    return 0;
}

void pl_serve_gpu_reset(pl_serve_gpu *g)
{
    g = g->owner;
    for (int i = 0; i < g->n_hist; i++)
        g->hist[i].n = 0, g->hist[i].input_len = 0;
}

/* ---- creation ---- */

/* The block table's arrays hold at least `ints` entries; growing them moves the device table, so the captured graphs
 * (which hold its address) go. */
static cudaError_t ensure_table(pl_serve_gpu *g, size_t ints)
{
    if (ints <= g->table_cap)
        return cudaSuccess;
    size_t cap = g->table_cap ? g->table_cap : 4096;
    while (cap < ints)
        cap *= 2;
    if (g->h.table)
        cudaFreeHost(g->h.table), g->h.table = NULL;
    if (g->d.table)
        cudaFree(g->d.table), g->d.table = NULL;
    g->table_cap = 0;
    for (int b = 0; b < BUCKETS; b++)
        if (g->graphs[b].exec)
            cudaGraphExecDestroy(g->graphs[b].exec), g->graphs[b].exec = NULL;
    cudaError_t e = cudaMallocHost((void **)&g->h.table, cap * sizeof(int));
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&g->d.table, cap * sizeof(int));
    if (e == cudaSuccess)
        g->table_cap = cap;
    return e;
}

static int alloc_arrays(pl_serve_gpu *g, char *err, size_t errlen)
{
    const size_t R = (size_t)g->M.max_rows;
    const size_t sizes[7] = {R * 4, R * 4, 0, R * 4, R * 4, R * 4, R * 8};
    void **host[7] = {(void **)&g->h.tokens,   (void **)&g->h.positions,  (void **)&g->h.table, (void **)&g->h.seq_lens,
                      (void **)&g->h.out_rows, (void **)&g->h.out_tokens, (void **)&g->h.slots};
    void **dev[7] = {(void **)&g->d.tokens,   (void **)&g->d.positions,  (void **)&g->d.table, (void **)&g->d.seq_lens,
                     (void **)&g->d.out_rows, (void **)&g->d.out_tokens, (void **)&g->d.slots};
    for (int i = 0; i < 7; i++) {
        if (!sizes[i])
            continue;
        cudaError_t e = cudaMallocHost(host[i], sizes[i]);
        if (e == cudaSuccess)
            e = cudaMalloc(dev[i], sizes[i]);
        if (e != cudaSuccess) {
            snprintf(err, errlen, "allocating the step's %zu-byte arrays: %s", sizes[i], cudaGetErrorString(e));
            return -1;
        }
    }
    g->starts = malloc((R + 1) * sizeof *g->starts);
    g->last = malloc((R + 1) * sizeof *g->last);
    if (!g->starts || !g->last) {
        snprintf(err, errlen, "out of host memory for the step's arrays");
        return -1;
    }
    return 0;
}

static int pow2_at_least(int n)
{
    int p = 1;
    while (p < n)
        p *= 2;
    return p;
}

int pl_serve_gpu_create(const pl_serve_gpu_options *o, pl_serve_gpu **out, int *num_pages_out, char *err, size_t errlen)
{
    *out = NULL;
    if (o->dtype != PL_WEIGHTS_BF16) {
        snprintf(err, errlen, "the GPU executor serves bf16 weights so far: use --dtype bf16");
        return -1;
    }
    int dev_count = 0;
    if (cudaGetDeviceCount(&dev_count) != cudaSuccess || o->device < 0 || o->device >= dev_count ||
        cudaSetDevice(o->device) != cudaSuccess) {
        snprintf(err, errlen, "no usable GPU %d for the executor", o->device);
        return -1;
    }
    pl_serve_gpu *g = calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, errlen, "out of host memory for the executor");
        return -1;
    }
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, o->device);
    const int seqs = o->max_num_seqs > 0 ? o->max_num_seqs : 256;
    const int tokens = o->max_num_batched_tokens > 0 ? o->max_num_batched_tokens : 2048;
    const int rows = pow2_at_least(tokens > seqs ? tokens : seqs);
    const pl_model_options mo = {.model = o->model,
                                 .layers = o->layers,
                                 .kv_dtype = o->kv_dtype,
                                 .page_size = o->page_size,
                                 .pages = o->num_pages > 0 ? o->num_pages + 1 : 0, /* + the padding rows' page */
                                 .max_rows = rows,
                                 .max_out = pow2_at_least(seqs),
                                 .max_context = o->page_size,
                                 .max_seqs = 1,
                                 .seed = o->seed,
                                 .sm_count = sms};
    if (pl_model_create(&mo, &g->M, err, errlen) != 0) {
        free(g);
        return -1;
    }
    g->seed = o->seed;
    g->owner = g;
    g->device = o->device;
    g->pages = g->M.pages - 1;
    g->scratch_page = g->M.pages - 1;
    pl_layer_recipe ladder[PL_LAYER_LADDER_STEPS];
    pl_layer_recipe_ladder(sms, NULL, ladder); /* the fused step runs on perflab's GEMMs: no cuBLAS handle */
    g->recipe = ladder[PL_LAYER_LADDER_FUSED];
    if (cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) != cudaSuccess ||
        alloc_arrays(g, err, errlen) != 0) {
        if (!err[0])
            snprintf(err, errlen, "cudaStreamCreate failed");
        pl_serve_gpu_destroy(g);
        return -1;
    }
    *num_pages_out = g->pages;
    *out = g;
    return 0;
}

void pl_serve_gpu_destroy(pl_serve_gpu *g)
{
    if (!g)
        return;
    for (int b = 0; b < BUCKETS; b++)
        if (g->graphs[b].exec)
            cudaGraphExecDestroy(g->graphs[b].exec);
    void *host[7] = {g->h.tokens,   g->h.positions,  g->h.table, g->h.seq_lens,
                     g->h.out_rows, g->h.out_tokens, g->h.slots};
    void *dev[7] = {g->d.tokens, g->d.positions, g->d.table, g->d.seq_lens, g->d.out_rows, g->d.out_tokens, g->d.slots};
    for (int i = 0; i < 7; i++) {
        if (host[i])
            cudaFreeHost(host[i]);
        if (dev[i])
            cudaFree(dev[i]);
    }
    if (g->stream)
        cudaStreamDestroy(g->stream);
    pl_model_destroy(&g->M);
    for (int i = 0; i < g->n_hist; i++)
        free(g->hist[i].tokens);
    free(g->hist), free(g->starts), free(g->last);
    free(g);
}

const int *pl_serve_gpu_last_tokens(const pl_serve_gpu *g)
{
    return g->last;
}

void pl_serve_gpu_share_tokens(pl_serve_gpu *g, pl_serve_gpu *owner)
{
    g->owner = owner->owner;
}

const pl_model *pl_serve_gpu_model(const pl_serve_gpu *g)
{
    return &g->M;
}

int pl_serve_gpu_device(const pl_serve_gpu *g)
{
    return g->device;
}

/* ---- a step ---- */

typedef struct step_build {
    int n, n_decode, prompts, width, n_out;
} step_build;

/* Row n: token pos of the part's request, its slot; a decode row also its table row and length. */
static int add_row(pl_serve_gpu *g, step_build *b, const pl_serve_work *w, int pos, int decode)
{
    const int r = b->n++, tok = token_at(g, w->req, pos);
    if (tok < 0)
        return -1;
    g->h.tokens[r] = tok;
    g->h.positions[r] = pos;
    g->h.slots[r] = pl_kv_slot(w->seq, pos, g->M.page_size);
    if (decode) {
        int *row = g->h.table + (size_t)r * b->width;
        for (int i = 0; i < b->width; i++)
            row[i] = i < w->seq->npages ? w->seq->pages[i] : -1;
        g->h.seq_lens[r] = pos + 1;
    }
    return 0;
}

/* A padding row of a decode-only graph: its K/V go to the padding page, it attends to that token alone. */
static void pad_row(pl_serve_gpu *g, step_build *b)
{
    const int r = b->n++;
    g->h.tokens[r] = 0;
    g->h.positions[r] = 0;
    g->h.slots[r] = (int64_t)g->scratch_page * g->M.page_size;
    int *row = g->h.table + (size_t)r * b->width;
    for (int i = 0; i < b->width; i++)
        row[i] = i == 0 ? g->scratch_page : -1;
    g->h.seq_lens[r] = 1;
}

static int table_width(const pl_serve_step *s)
{
    int most = 1;
    for (int i = 0; i < s->n_decode; i++)
        most = s->decode[i].seq->npages > most ? s->decode[i].seq->npages : most;
    for (int i = 0; i < s->n_prefill; i++)
        if (s->prefill[i].start > 0)
            most = s->prefill[i].seq->npages > most ? s->prefill[i].seq->npages : most;
    return pow2_at_least(most);
}

/* The rows: decodes and continuing chunks first (the paged decode kernel), then the chunks that start a prompt (the
 * prefill). out_rows: each emitting part's last row; g->last's slot for part k is where its token goes. */
static int build(pl_serve_gpu *g, const pl_serve_step *s, step_build *b, int *part_row)
{
    memset(b, 0, sizeof *b);
    b->width = table_width(s);
    if (ensure_table(g, (size_t)pow2_at_least(s->tokens > 0 ? s->tokens : 1) * b->width) != cudaSuccess)
        return -1;
    for (int j = 0; j < s->n_decode; j++) {
        if (add_row(g, b, &s->decode[j], s->decode[j].start, 1) != 0)
            return -1;
        part_row[s->n_prefill + j] = s->decode[j].emits ? b->n - 1 : -1;
    }
    for (int i = 0; i < s->n_prefill; i++) {
        const pl_serve_work *w = &s->prefill[i];
        if (w->start == 0)
            continue;
        for (int t = w->start; t < w->start + w->tokens; t++)
            if (add_row(g, b, w, t, 1) != 0)
                return -1;
        part_row[i] = w->emits ? b->n - 1 : -1;
    }
    b->n_decode = b->n;
    for (int i = 0; i < s->n_prefill; i++) {
        const pl_serve_work *w = &s->prefill[i];
        if (w->start != 0)
            continue;
        g->starts[b->prompts++] = b->n - b->n_decode;
        for (int t = 0; t < w->tokens; t++)
            if (add_row(g, b, w, t, 0) != 0)
                return -1;
        part_row[i] = w->emits ? b->n - 1 : -1;
    }
    g->starts[b->prompts] = b->n - b->n_decode;
    for (int k = 0; k < s->n_prefill + s->n_decode; k++)
        if (part_row[k] >= 0)
            g->h.out_rows[b->n_out++] = part_row[k];
    return 0;
}

static cudaError_t upload(pl_serve_gpu *g, const step_build *b)
{
    const size_t n = (size_t)b->n;
    struct {
        void *d;
        const void *h;
        size_t bytes;
    } c[6] = {{g->d.tokens, g->h.tokens, n * 4},
              {g->d.positions, g->h.positions, n * 4},
              {g->d.slots, g->h.slots, n * 8},
              {g->d.table, g->h.table, (size_t)b->n_decode * b->width * 4},
              {g->d.seq_lens, g->h.seq_lens, (size_t)b->n_decode * 4},
              {g->d.out_rows, g->h.out_rows, (size_t)b->n_out * 4}};
    for (int i = 0; i < 6; i++)
        if (c[i].bytes) {
            const cudaError_t e = cudaMemcpyAsync(c[i].d, c[i].h, c[i].bytes, cudaMemcpyHostToDevice, g->stream);
            if (e != cudaSuccess)
                return e;
        }
    return cudaSuccess;
}

static pl_model_rows rows_of(pl_serve_gpu *g, const step_build *b)
{
    const pl_model_rows r = {.n = b->n,
                             .tokens = g->d.tokens,
                             .positions = g->d.positions,
                             .slots = g->d.slots,
                             .n_decode = b->n_decode,
                             .max_pages = b->width,
                             .block_table = g->d.table,
                             .seq_lens = g->d.seq_lens,
                             .prompts = b->prompts,
                             .starts = g->starts,
                             .n_out = b->n_out,
                             .out_rows = g->d.out_rows,
                             .out_tokens = g->d.out_tokens};
    return r;
}

/* A decode-only step padded to its bucket: eager the first time (the GEMM picks for the shapes are made), then
 * captured and replayed (captured again when the table width grows). */
static cudaError_t run_decode_graph(pl_serve_gpu *g, step_build *b)
{
    const int real = b->n, rows = pow2_at_least(real);
    int bucket = 0;
    while ((1 << bucket) < rows)
        bucket++;
    if (bucket >= BUCKETS || rows > g->M.max_rows || rows > g->M.max_out)
        return cudaErrorInvalidValue;
    while (b->n < rows)
        pad_row(g, b);
    for (int k = b->n_out; k < rows; k++) /* the padding's samples: row 0 again, never read */
        g->h.out_rows[k] = 0;
    b->n_decode = b->n_out = rows;
    cudaError_t e = upload(g, b);
    if (e != cudaSuccess)
        return e;
    graph_slot *gs = &g->graphs[bucket];
    const pl_model_rows mr = rows_of(g, b);
    if (!gs->warmed) {
        gs->warmed = 1;
        return pl_model_step(&g->M, &g->recipe, &mr, g->stream);
    }
    if (!gs->exec || gs->width != b->width) {
        if (gs->exec)
            cudaGraphExecDestroy(gs->exec), gs->exec = NULL;
        cudaGraph_t graph;
        if ((e = cudaStreamBeginCapture(g->stream, cudaStreamCaptureModeThreadLocal)) != cudaSuccess)
            return e;
        const cudaError_t se = pl_model_step(&g->M, &g->recipe, &mr, g->stream);
        e = cudaStreamEndCapture(g->stream, &graph);
        if (se != cudaSuccess || e != cudaSuccess)
            return se != cudaSuccess ? se : e;
        e = cudaGraphInstantiate(&gs->exec, graph, 0);
        cudaGraphDestroy(graph);
        if (e != cudaSuccess)
            return e;
        gs->width = b->width;
    }
    return cudaGraphLaunch(gs->exec, g->stream);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int pl_serve_gpu_step(void *ctx, const pl_serve_step *s, double *seconds)
{
    pl_serve_gpu *g = ctx;
    const int parts = s->n_prefill + s->n_decode;
    if (s->tokens > g->M.max_rows || parts > g->M.max_rows || s->n_prefill + s->n_decode < 1)
        return (int)cudaErrorInvalidValue;
    const cudaError_t de = cudaSetDevice(g->device); /* two executors of a disaggregated run share the thread */
    if (de != cudaSuccess)
        return (int)de;
    const double t0 = now_s();
    step_build b;
    int *part_row = g->last; /* reused: the parts' rows first, their tokens after */
    if (build(g, s, &b, part_row) != 0)
        return (int)cudaErrorInvalidValue;
    cudaError_t e;
    if (s->n_prefill == 0) {
        e = run_decode_graph(g, &b);
    } else {
        e = upload(g, &b);
        if (e == cudaSuccess) {
            const pl_model_rows mr = rows_of(g, &b);
            e = pl_model_step(&g->M, &g->recipe, &mr, g->stream);
        }
    }
    if (e == cudaSuccess && b.n_out > 0)
        e = cudaMemcpyAsync(g->h.out_tokens, g->d.out_tokens, (size_t)b.n_out * 4, cudaMemcpyDeviceToHost, g->stream);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(g->stream);
    if (e != cudaSuccess)
        return (int)e;
    *seconds = now_s() - t0;
    /* the parts' tokens: out_rows hold the emitting parts' rows in part order, so the k-th has the k-th token */
    int k = 0;
    for (int p = 0; p < parts; p++) {
        const int has = part_row[p] >= 0;
        const pl_serve_work *w = p < s->n_prefill ? &s->prefill[p] : &s->decode[p - s->n_prefill];
        g->last[p] = has ? g->h.out_tokens[k++] : -1;
        if (has && record(g, w, g->last[p]) != 0)
            return (int)cudaErrorMemoryAllocation;
    }
    return 0;
}
