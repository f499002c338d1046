#include "selector/shapes.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "selector/shapes_random.h"

/* The built-in shapes. `default` (what a plain `perflab gemm` runs) is the prefill and decode groups: transformer
 * GEMMs of Llama-3 8B/70B-like widths. `wide` covers what inference and training meet, each shape's
 * origin stated: decode (M = 1-128), small prefill (M = 256-2048), sizes that are no multiple of 64/128, short K
 * (≤ 1024) and long K (≥ 16384), narrow N (≤ 512), vocabulary projections (N 32000-152064), from the published
 * configurations of Llama-3 8B (hidden 4096, MLP 14336, 32 query and 8 key/value heads of 128, vocabulary 128256)
 * and 70B (8192, 28672, 64 and 8 heads, 128256), Mixtral 8x7B (4096, experts of 14336, 8 experts top-2, 32000),
 * Qwen2-7B (3584, 18944, 28 and 4 heads, 152064), DeepSeek-V3 (7168, routed experts of 2048, 256 experts, MLA with
 * a 1536 query and 512 key/value latent, 128 heads of 128 + 64 rotary, 129280), GPT-2 (768, 50257) and ViT-B/16. */
#define G_PREFILL "prefill"
#define G_DECODE  "decode"
#define G_WIDE    "wide"
static const pl_gemm_builtin builtins[] = {
    {{"prefill_mlp_gather_m8192_n16384_k4096", 8192, 16384, 4096}, G_PREFILL, "an MLP up-projection, 8192 tokens"},
    {{"prefill_mlp_expand_m16384_n16384_k8192", 16384, 16384, 8192}, G_PREFILL, "a wide MLP, 16384 tokens"},
    {{"decode_mlp_m4096_n4096_k8192", 4096, 4096, 8192}, G_PREFILL, "an MLP down-projection, 4096 tokens"},
    {{"kv_proj_m4096_n4096_k4096", 4096, 4096, 4096}, G_PREFILL, "an attention projection, 4096 tokens"},
    {{"attention_qk_m8192_n4096_k4096", 8192, 4096, 4096}, G_PREFILL, "an attention projection, 8192 tokens"},
    {{"square_m8192_n8192_k8192", 8192, 8192, 8192}, G_PREFILL, "the square benchmark shape"},
    {{"decode_m16_n4096_k4096", 16, 4096, 4096}, G_DECODE, "Llama-3 8B attention output, 16 sequences"},
    {{"decode_m16_n28672_k8192", 16, 28672, 8192}, G_DECODE, "Llama-3 70B gate or up, 16 sequences"},
    {{"decode_m64_n14336_k4096", 64, 14336, 4096}, G_DECODE, "Llama-3 8B gate or up, 64 sequences"},
    {{"decode_m64_n4096_k14336", 64, 4096, 14336}, G_DECODE, "Llama-3 8B down, 64 sequences"},
    {{"decode_m128_n28672_k8192", 128, 28672, 8192}, G_DECODE, "Llama-3 70B gate or up, 128 sequences"},
    {{"decode_m128_n8192_k28672", 128, 8192, 28672}, G_DECODE, "Llama-3 70B down, 128 sequences"},
    /* ---- wide: decode, M = 1-128 (M = the sequences decoding, or the tokens routed to one expert) ---- */
    {{"llama3_8b_qkv_m1_n6144_k4096", 1, 6144, 4096}, G_WIDE, "Llama-3 8B fused QKV (32 + 2·8 heads of 128), batch 1"},
    {{"llama3_8b_o_m16_n4096_k4096", 16, 4096, 4096}, G_WIDE, "Llama-3 8B attention output, 16 sequences"},
    {{"llama3_8b_gate_up_m32_n28672_k4096", 32, 28672, 4096},
     G_WIDE,
     "Llama-3 8B fused gate+up (2·14336), 32 sequences"},
    {{"llama3_70b_qkv_m128_n10240_k8192", 128, 10240, 8192},
     G_WIDE,
     "Llama-3 70B fused QKV (64 + 2·8 heads of 128), 128 sequences"},
    {{"llama3_70b_o_m1_n8192_k8192", 1, 8192, 8192}, G_WIDE, "Llama-3 70B attention output, batch 1"},
    {{"llama3_70b_gate_up_m16_n57344_k8192", 16, 57344, 8192},
     G_WIDE,
     "Llama-3 70B fused gate+up (2·28672), 16 sequences"},
    {{"llama3_70b_down_m32_n8192_k28672", 32, 8192, 28672}, G_WIDE, "Llama-3 70B down (long K), 32 sequences"},
    {{"mixtral_w1_m16_n14336_k4096", 16, 14336, 4096},
     G_WIDE,
     "Mixtral 8x7B expert w1: 16 tokens routed to it (64 sequences, top-2 of 8)"},
    {{"mixtral_w2_m64_n4096_k14336", 64, 4096, 14336}, G_WIDE, "Mixtral 8x7B expert w2, 64 tokens routed to it"},
    {{"qwen2_7b_qkv_m16_n4608_k3584", 16, 4608, 3584},
     G_WIDE,
     "Qwen2-7B fused QKV (28 + 2·4 heads of 128), 16 sequences"},
    {{"qwen2_7b_down_m128_n3584_k18944", 128, 3584, 18944}, G_WIDE, "Qwen2-7B down (18944 -> 3584), 128 sequences"},
    {{"deepseek_v3_kv_a_m32_n576_k7168", 32, 576, 7168},
     G_WIDE,
     "DeepSeek-V3 MLA kv_a_proj_with_mqa (512 latent + 64 rotary: N no multiple of 128), 32 sequences"},
    {{"deepseek_v3_expert_up_m64_n4096_k7168", 64, 4096, 7168},
     G_WIDE,
     "DeepSeek-V3 routed expert gate+up (2·2048), 64 tokens routed to it"},
    /* ---- narrow N (≤ 512) ---- */
    {{"mixtral_router_m128_n8_k4096", 128, 8, 4096}, G_WIDE, "Mixtral 8x7B router (8 experts), 128 tokens"},
    {{"deepseek_v3_router_m256_n256_k7168", 256, 256, 7168}, G_WIDE, "DeepSeek-V3 router (256 experts), 256 tokens"},
    {{"qwen2_7b_k_m512_n512_k3584", 512, 512, 3584}, G_WIDE, "Qwen2-7B k_proj alone (4 heads of 128), 512 tokens"},
    {{"lora_a_r64_m2048_n64_k4096", 2048, 64, 4096}, G_WIDE, "LoRA rank 64 on a Llama-3 8B layer, A (4096 -> 64)"},
    /* ---- vocabulary projections (LM heads) ---- */
    {{"llama3_8b_lm_head_m1_n128256_k4096", 1, 128256, 4096},
     G_WIDE,
     "Llama-3 8B LM head (vocabulary 128256), batch 1"},
    {{"llama3_70b_lm_head_m128_n128256_k8192", 128, 128256, 8192}, G_WIDE, "Llama-3 70B LM head, 128 sequences"},
    {{"qwen2_7b_lm_head_m32_n152064_k3584", 32, 152064, 3584},
     G_WIDE,
     "Qwen2-7B LM head (vocabulary 152064), 32 sequences"},
    {{"mixtral_lm_head_m64_n32000_k4096", 64, 32000, 4096},
     G_WIDE,
     "Mixtral 8x7B / Mistral 7B LM head (vocabulary 32000), 64 sequences"},
    {{"deepseek_v3_lm_head_m16_n129280_k7168", 16, 129280, 7168},
     G_WIDE,
     "DeepSeek-V3 LM head (vocabulary 129280), 16 sequences"},
    {{"gpt2_lm_head_m1024_n50257_k768", 1024, 50257, 768},
     G_WIDE,
     "GPT-2 LM head (50257: odd N; hidden 768: short K), 1024 tokens"},
    /* ---- small prefill, M = 256-2048 ---- */
    {{"llama3_8b_qkv_m256_n6144_k4096", 256, 6144, 4096}, G_WIDE, "Llama-3 8B fused QKV, a 256-token prefill chunk"},
    {{"llama3_8b_down_m512_n4096_k14336", 512, 4096, 14336}, G_WIDE, "Llama-3 8B down, a 512-token chunk"},
    {{"llama3_70b_o_m1024_n8192_k8192", 1024, 8192, 8192}, G_WIDE, "Llama-3 70B attention output, 1024 tokens"},
    {{"qwen2_7b_gate_up_m2048_n37888_k3584", 2048, 37888, 3584},
     G_WIDE,
     "Qwen2-7B fused gate+up (2·18944), 2048 tokens"},
    {{"mixtral_w1_m384_n14336_k4096", 384, 14336, 4096},
     G_WIDE,
     "Mixtral 8x7B expert w1: 384 tokens routed to it (a 1536-token prefill, top-2 of 8)"},
    {{"deepseek_v3_q_b_m512_n24576_k1536", 512, 24576, 1536},
     G_WIDE,
     "DeepSeek-V3 MLA q_b_proj (1536 latent -> 128 heads of 192), 512 tokens"},
    /* ---- short K (≤ 1024) and long K (≥ 16384) ---- */
    {{"deepseek_v3_kv_b_m1024_n32768_k512", 1024, 32768, 512},
     G_WIDE,
     "DeepSeek-V3 MLA kv_b_proj (512 latent -> 128 heads of 128 + 128), 1024 tokens"},
    {{"vit_b16_qkv_m3152_n2304_k768", 3152, 2304, 768},
     G_WIDE,
     "ViT-B/16 fused QKV at batch 16 (16·197 tokens: M no multiple of 64; hidden 768)"},
    {{"lora_b_r64_m2048_n4096_k64", 2048, 4096, 64}, G_WIDE, "LoRA rank 64 on a Llama-3 8B layer, B (64 -> 4096)"},
    {{"deepseek_v3_o_m256_n7168_k16384", 256, 7168, 16384},
     G_WIDE,
     "DeepSeek-V3 MLA o_proj (128 heads of 128 -> 7168), 256 tokens"},
    {{"llama3_70b_down_m2048_n8192_k28672", 2048, 8192, 28672}, G_WIDE, "Llama-3 70B down, 2048 tokens"},
    /* ---- sizes that are no multiple of 64 ---- */
    {{"llama3_8b_up_m200_n14336_k4096", 200, 14336, 4096},
     G_WIDE,
     "Llama-3 8B up under continuous batching: 200 tokens in flight"},
    {{"odd_m1000_n3000_k520", 1000, 3000, 520}, G_WIDE, "synthetic: no dimension a multiple of 64"},
    {{"odd_m777_n1537_k2056", 777, 1537, 2056},
     G_WIDE,
     "synthetic: M and N odd (N % 8 != 0: no TMA store), K a multiple of 8 only"},
    {{"odd_m4104_n4104_k1032", 4104, 4104, 1032}, G_WIDE, "synthetic: 8 past a multiple of 128 in every dimension"},
};
#define N_BUILTINS (sizeof builtins / sizeof builtins[0])

static const char *const groups[] = {"default", G_PREFILL, G_DECODE, G_WIDE};
#define N_GROUPS (sizeof groups / sizeof groups[0])

const pl_gemm_builtin *pl_gemm_builtins(size_t *n)
{
    *n = N_BUILTINS;
    return builtins;
}

const char *const *pl_gemm_shape_groups(size_t *n)
{
    *n = N_GROUPS;
    return groups;
}

int pl_gemm_group_has(const char *group, const pl_gemm_builtin *b)
{
    if (strcmp(group, "default") == 0)
        return strcmp(b->group, G_PREFILL) == 0 || strcmp(b->group, G_DECODE) == 0;
    return strcmp(group, b->group) == 0;
}

double pl_gemm_shape_flops(const pl_gemm_shape *s)
{
    return 2.0 * (double)s->m * (double)s->n * (double)s->k;
}

void pl_gemm_shape_list_free(pl_gemm_shape_list *l)
{
    free(l->items);
    free(l->random);
    memset(l, 0, sizeof *l);
}

void pl_gemm_shape_list_add(pl_gemm_shape_list *l, const pl_gemm_shape *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].name, s->name) == 0 && l->items[i].m == s->m && l->items[i].n == s->n &&
            l->items[i].k == s->k)
            return;
    pl_reserve(&l->items, &l->cap, l->n + 1, sizeof *l->items);
    l->items[l->n++] = *s;
}

static int add_group(pl_gemm_shape_list *l, const char *name)
{
    if (pl_index_of(groups, (int)N_GROUPS, name) < 0)
        return 0;
    for (size_t i = 0; i < N_BUILTINS; i++)
        if (pl_gemm_group_has(name, &builtins[i]))
            pl_gemm_shape_list_add(l, &builtins[i].shape);
    return 1;
}

/* A positive dimension within the limit; *end is left after its digits. */
static int parse_dim(const char *s, const char **end, long long *out)
{
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *e;
    long long v = strtoll(s, &e, 10);
    if (errno || v < 1 || v > PL_GEMM_DIM_MAX)
        return -1;
    *end = e;
    *out = v;
    return 0;
}

int pl_gemm_dim_parse(const char *s, long long *out)
{
    const char *end;
    return parse_dim(s, &end, out) == 0 && !*end ? 0 : -1;
}

/* "MxNxK" exactly (also with 'X'); 0 when it is one, -1 when it is not. */
static int parse_mnk(const char *s, long long *m, long long *n, long long *k)
{
    const char *p = s;
    if (parse_dim(p, &p, m) != 0 || (*p != 'x' && *p != 'X'))
        return -1;
    if (parse_dim(p + 1, &p, n) != 0 || (*p != 'x' && *p != 'X'))
        return -1;
    if (parse_dim(p + 1, &p, k) != 0 || *p)
        return -1;
    return 0;
}

static int valid_name(const char *s)
{
    if (!*s || strlen(s) >= PL_GEMM_SHAPE_NAME_MAX)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
            return 0;
    return 1;
}

static int limits_ok(long long m, long long n, char *err, size_t errlen, const char *where)
{
    if ((double)m * (double)n > 4294967295.0) {
        pl_snprintf(err, errlen, "%s: M·N = %.3g exceeds 2^32 output elements; use a smaller M or N", where,
                    (double)m * (double)n);
        return 0;
    }
    return 1;
}

static const pl_gemm_shape *find_builtin(const char *name)
{
    for (size_t i = 0; i < N_BUILTINS; i++)
        if (strcmp(builtins[i].shape.name, name) == 0)
            return &builtins[i].shape;
    return NULL;
}

static void unknown_name(const char *item, char *err, size_t errlen, const char *where)
{
    const char *names[N_BUILTINS + N_GROUPS];
    for (size_t i = 0; i < N_BUILTINS; i++)
        names[i] = builtins[i].shape.name;
    for (size_t i = 0; i < N_GROUPS; i++)
        names[N_BUILTINS + i] = groups[i];
    char sugg[512];
    if (pl_suggest(item, names, N_BUILTINS + N_GROUPS, 3, sugg, sizeof sugg) > 0)
        pl_snprintf(err, errlen,
                    "%sunknown shape '%s' (did you mean %s?); write MxNxK or a built-in name "
                    "('perflab gemm --list-shapes')",
                    where, PL_ESC(item), sugg);
    else
        pl_snprintf(err, errlen,
                    "%sunknown shape '%s'; write MxNxK (e.g. 4096x4096x4096) or a built-in name "
                    "('perflab gemm --list-shapes')",
                    where, PL_ESC(item));
}

/* One item: a built-in or group name, MxNxK or random:N[:SEED]. */
static int parse_item(const char *item, pl_gemm_shape_list *out, char *err, size_t errlen, const char *where)
{
    if (strncmp(item, "random", 6) == 0 && (item[6] == ':' || !item[6])) {
        char why[512];
        if (pl_gemm_random_item(item, out, why, sizeof why) == 0)
            return 0;
        pl_snprintf(err, errlen, "%s%s", where, why);
        return -1;
    }
    pl_gemm_shape s;
    memset(&s, 0, sizeof s);
    if (parse_mnk(item, &s.m, &s.n, &s.k) == 0) {
        if (!limits_ok(s.m, s.n, err, errlen, item))
            return -1;
        pl_snprintf(s.name, sizeof s.name, "m%lld_n%lld_k%lld", s.m, s.n, s.k);
        pl_gemm_shape_list_add(out, &s);
        return 0;
    }
    const pl_gemm_shape *b = find_builtin(item);
    if (b) {
        pl_gemm_shape_list_add(out, b);
        return 0;
    }
    if (add_group(out, item))
        return 0;
    if (isdigit((unsigned char)item[0]))
        pl_snprintf(err, errlen, "%s'%s' is not a shape: write MxNxK with each of M, N, K from 1 to %lld", where,
                    PL_ESC(item), PL_GEMM_DIM_MAX);
    else
        unknown_name(item, err, errlen, where);
    return -1;
}

/* The list is bounded before it grows further: each shape is a benchmark of its own, and duplicates are found by
 * comparing with every shape so far. */
int pl_gemm_shape_list_room(const pl_gemm_shape_list *l, size_t count, const char *where, char *err, size_t errlen)
{
    if (l->n <= PL_GEMM_MAX_SHAPES && count <= PL_GEMM_MAX_SHAPES - l->n)
        return 0;
    pl_snprintf(err, errlen, "%s: more than %d shapes; split them over several runs", where, PL_GEMM_MAX_SHAPES);
    return -1;
}

static int too_many(const pl_gemm_shape_list *l, const char *where, char *err, size_t errlen)
{
    return pl_gemm_shape_list_room(l, 1, where, err, errlen) != 0;
}

int pl_gemm_shapes_parse(const char *spec, pl_gemm_shape_list *out, char *err, size_t errlen)
{
    char *copy = pl_strdup(spec);
    int rc = 0, items = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && rc == 0; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && isspace((unsigned char)end[-1]))
            *--end = '\0';
        if (!*tok)
            continue;
        items++;
        rc = too_many(out, "--shapes", err, errlen) ? -1 : parse_item(tok, out, err, errlen, "--shapes: ");
    }
    free(copy);
    if (rc == 0 && items == 0) {
        pl_snprintf(err, errlen,
                    "--shapes is empty: name shapes, e.g. --shapes 4096x4096x4096,kv_proj_m4096_n4096_k4096");
        return -1;
    }
    return rc;
}

/* Split a line into whitespace-separated words; max + 1 when there are more than max. */
static int split_words(char *line, char **w, int max)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(line, " \t\r", &save); t; t = strtok_r(NULL, " \t\r", &save)) {
        if (n == max)
            return max + 1;
        w[n++] = t;
    }
    return n;
}

/* One line of a shapes file; *items counts the shapes it named. */
static int parse_file_line(char *line, const char *where, pl_gemm_shape_list *out, int *items, char *err, size_t errlen)
{
    char *hash = strchr(line, '#');
    if (hash)
        *hash = '\0';
    char *w[5];
    int n = split_words(line, w, 4);
    if (n == 0)
        return 0;
    ++*items;
    if (n == 1)
        return parse_item(w[0], out, err, errlen, where);
    pl_gemm_shape s;
    memset(&s, 0, sizeof s);
    if (n == 2 && parse_mnk(w[1], &s.m, &s.n, &s.k) == 0) {
        /* NAME MxNxK */
    } else if (n == 4 && pl_gemm_dim_parse(w[1], &s.m) == 0 && pl_gemm_dim_parse(w[2], &s.n) == 0 &&
               pl_gemm_dim_parse(w[3], &s.k) == 0) {
        /* NAME M N K */
    } else {
        pl_snprintf(err, errlen, "%sexpected 'MxNxK', 'NAME MxNxK' or 'NAME M N K' with dimensions from 1 to %lld",
                    where, PL_GEMM_DIM_MAX);
        return -1;
    }
    if (!valid_name(w[0])) {
        pl_snprintf(err, errlen, "%sshape name '%s' must be letters, digits, '_', '-' or '.' (up to %d)", where,
                    PL_ESC(w[0]), PL_GEMM_SHAPE_NAME_MAX - 1);
        return -1;
    }
    const pl_gemm_shape *b = find_builtin(w[0]);
    if (b && (b->m != s.m || b->n != s.n || b->k != s.k)) {
        pl_snprintf(err, errlen, "%s'%s' is a built-in shape (%lldx%lldx%lld): pick another name", where, PL_ESC(w[0]),
                    b->m, b->n, b->k);
        return -1;
    }
    if (!limits_ok(s.m, s.n, err, errlen, w[0]))
        return -1;
    pl_snprintf(s.name, sizeof s.name, "%s", w[0]);
    pl_gemm_shape_list_add(out, &s);
    return 0;
}

int pl_gemm_shapes_load_file(const char *path, pl_gemm_shape_list *out, char *err, size_t errlen)
{
    char rerr[512];
    size_t len;
    char *text = pl_read_file(path, &len, rerr, sizeof rerr);
    if (!text) {
        pl_snprintf(err, errlen, "--shapes-file: %s", rerr);
        return -1;
    }
    const char *nul = memchr(text, '\0', len);
    if (nul) { /* the lines after it would be silently lost */
        int line = 1;
        for (const char *c = text; c < nul; c++)
            line += *c == '\n';
        pl_snprintf(err, errlen, "%s:%d: a NUL byte: a shapes file is text, one shape a line", PL_ESC(path), line);
        free(text);
        return -1;
    }
    int rc = 0, lineno = 0, items = 0;
    for (char *line = text; line && rc == 0;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        char where[512];
        pl_snprintf(where, sizeof where, "%s:%d: ", PL_ESC(path), lineno);
        rc = too_many(out, PL_ESC(path), err, errlen) ? -1 : parse_file_line(line, where, out, &items, err, errlen);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (rc == 0 && items == 0) {
        pl_snprintf(err, errlen, "%s: no shapes in the file: write one per line, e.g. 'my_proj 4096 4096 4096'",
                    PL_ESC(path));
        return -1;
    }
    return rc;
}
