/* A struct described once, as a table of its fields, drives its JSON writer, its JSON reader and its free: each
 * field says its JSON key, its C type and where it lies (offsetof). Nested structs, arrays of structs, enums by
 * name, optional parts and the odd field with a format of its own (a custom pair of functions) are all fields. */
#ifndef PERFLAB_CORE_JSCHEMA_H
#define PERFLAB_CORE_JSCHEMA_H

#include <jansson.h>
#include <math.h>
#include <stddef.h>

typedef enum pl_jkind {
    PL_J_STR,     /* char * (malloc'd), null when NULL */
    PL_J_CHARS,   /* char[size] inline */
    PL_J_INT,     /* int; a JSON boolean reads as 0/1 */
    PL_J_BOOL,    /* int written as a JSON boolean */
    PL_J_SIZE,    /* size_t */
    PL_J_U64,     /* unsigned long long */
    PL_J_REAL,    /* double; NaN and Inf are written as null and read back as NaN */
    PL_J_ENUM,    /* int stored as its name (names/n_names); an unknown name is an error if REQUIRED, else dflt */
    PL_J_OBJECT,  /* a struct at offset, described by `sub` (offset 0: a group of this struct's own fields) */
    PL_J_ARRAY,   /* T * at offset, its count a size_t at count_offset, T described by `sub` (elem_size bytes) */
    PL_J_REALS,   /* double * at offset, its count a size_t at count_offset: an array of numbers */
    PL_J_CUSTOM,  /* to/from/free functions of their own, given the whole struct */
} pl_jkind;

enum pl_jflags {
    PL_JF_REQUIRED = 1u << 0,   /* reading fails when the key is missing or malformed */
    PL_JF_PRESENCE = 1u << 1,   /* OBJECT: written only when the int at present_offset is non-zero; reading sets
                                   that int to whether the key holds an object */
    PL_JF_NAN_ZERO = 1u << 2,   /* REAL: read NaN/absent as 0 */
};

struct pl_jfield;
typedef struct pl_jtable {
    const struct pl_jfield *fields;
    size_t n;
    /* Called after a successful read (derived members, checks); may be NULL. Returns -1 with err set to fail. */
    int (*after_read)(void *obj, char *err, size_t errlen);
} pl_jtable;

typedef struct pl_jfield {
    const char *key;
    pl_jkind kind;
    size_t offset;
    unsigned flags;
    double dflt;                  /* INT/BOOL/ENUM/REAL/SIZE default when absent */
    size_t size;                  /* CHARS: the buffer's size */
    const char *const *names;     /* ENUM */
    int n_names;
    const pl_jtable *sub;         /* OBJECT/ARRAY */
    size_t elem_size, count_offset; /* ARRAY/REALS */
    size_t present_offset;        /* PRESENCE */
    json_t *(*to)(const void *obj);                                      /* CUSTOM */
    int (*from)(json_t *value, void *obj, char *err, size_t errlen);    /* CUSTOM: value may be NULL */
    void (*free_fn)(void *obj);                                          /* CUSTOM, may be NULL */
} pl_jfield;

#define PL_JTABLE(fields, after) {(fields), sizeof(fields) / sizeof((fields)[0]), (after)}

/* Field declarations: T is the struct type, M the member, K the JSON key. */
#define PL_JSTR(T, M, K)            {.key = (K), .kind = PL_J_STR, .offset = offsetof(T, M)}
#define PL_JCHARS(T, M, K)          {.key = (K), .kind = PL_J_CHARS, .offset = offsetof(T, M), .size = sizeof(((T *)0)->M)}
#define PL_JINT(T, M, K, D)         {.key = (K), .kind = PL_J_INT, .offset = offsetof(T, M), .dflt = (D)}
#define PL_JBOOL(T, M, K)           {.key = (K), .kind = PL_J_BOOL, .offset = offsetof(T, M)}
#define PL_JBOOL_D(T, M, K, D)      {.key = (K), .kind = PL_J_BOOL, .offset = offsetof(T, M), .dflt = (D)}
#define PL_JSIZE(T, M, K)           {.key = (K), .kind = PL_J_SIZE, .offset = offsetof(T, M)}
#define PL_JU64(T, M, K)            {.key = (K), .kind = PL_J_U64, .offset = offsetof(T, M)}
#define PL_JREAL(T, M, K)           {.key = (K), .kind = PL_J_REAL, .offset = offsetof(T, M), .dflt = NAN}
#define PL_JENUM(T, M, K, NAMES, N, F, D)                                                                             \
    {.key = (K), .kind = PL_J_ENUM, .offset = offsetof(T, M), .flags = (F), .names = (NAMES), .n_names = (N), .dflt = (D)}
#define PL_JOBJ(T, M, K, SUB)       {.key = (K), .kind = PL_J_OBJECT, .offset = offsetof(T, M), .sub = (SUB)}
#define PL_JGROUP(K, SUB)           {.key = (K), .kind = PL_J_OBJECT, .offset = 0, .sub = (SUB)}
#define PL_JOPT(T, M, K, SUB, HAS)                                                                                     \
    {.key = (K), .kind = PL_J_OBJECT, .offset = offsetof(T, M), .flags = PL_JF_PRESENCE, .sub = (SUB),             \
     .present_offset = offsetof(T, HAS)}
#define PL_JARRAY(T, M, COUNT, K, ET, SUB)                                                                             \
    {.key = (K), .kind = PL_J_ARRAY, .offset = offsetof(T, M), .count_offset = offsetof(T, COUNT),                \
     .elem_size = sizeof(ET), .sub = (SUB)}
#define PL_JREALS(T, M, COUNT, K)                                                                                      \
    {.key = (K), .kind = PL_J_REALS, .offset = offsetof(T, M), .count_offset = offsetof(T, COUNT)}
#define PL_JCUSTOM(K, TO, FROM, FREE) {.key = (K), .kind = PL_J_CUSTOM, .to = (TO), .from = (FROM), .free_fn = (FREE)}

json_t *pl_jtable_to_json(const pl_jtable *t, const void *obj);
/* The caller zeroes *obj first (absent keys take their defaults). On an error, what was read so far stays in *obj (free it with pl_jtable_free). The message
 * names the key path ("variants[2].status: ..."). */
int pl_jtable_from_json(const pl_jtable *t, json_t *j, void *obj, char *err, size_t errlen);
/* Frees every string, array and custom part, recursively (the caller zeroes *obj after). */
void pl_jtable_free(const pl_jtable *t, void *obj);

#endif
