/*
 * edgert C example: BlazeFace through the C ABI (include/edgert.h, libedgert).
 *
 *   c-example MODEL.onnx INPUT.npy [GOLDEN_DIR]
 *
 * Builds an engine from the ONNX model, saves it and loads it back (what firmware does at
 * boot), runs one image (a float32 .npy in the model's input shape), prints the top face
 * scores and, given GOLDEN_DIR with output_0.npy/output_1.npy (onnxruntime's outputs for the
 * same input, in output order), checks every output within the f32 tolerance of DESIGN.md.
 * Also checks that misuse is reported as an error code with a message, never a crash.
 * Exit status 0 only if everything passed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgert.h"

static int failures = 0;

#define CHECK(call)                                                                        \
  do {                                                                                     \
    EdgertStatus s_ = (call);                                                              \
    if (s_ != EDGERT_STATUS_OK) {                                                          \
      fprintf(stderr, "%s:%d: %s failed: %s: %s\n", __FILE__, __LINE__, #call,             \
              edgert_status_name((int)s_), edgert_last_error());                           \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

/* A float32 .npy file: shape and data (little-endian, C order). */
typedef struct {
  size_t dims[8];
  size_t ndims;
  float *data;
  size_t count;
} Npy;

static int read_npy(const char *path, Npy *out) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: cannot open\n", path);
    return -1;
  }
  unsigned char magic[8];
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "%s: not a .npy file\n", path);
    fclose(f);
    return -1;
  }
  size_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (fread(b, 1, 2, f) != 2) goto bad;
    hlen = b[0] | (size_t)b[1] << 8;
  } else {
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4) goto bad;
    hlen = b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
  }
  char *h = calloc(hlen + 1, 1);
  if (!h || fread(h, 1, hlen, f) != hlen) {
    free(h);
    goto bad;
  }
  if (!strstr(h, "'descr': '<f4'") || !strstr(h, "'fortran_order': False")) {
    fprintf(stderr, "%s: want little-endian float32 in C order, header %s\n", path, h);
    free(h);
    fclose(f);
    return -1;
  }
  const char *p = strstr(h, "'shape': (");
  if (!p) {
    free(h);
    goto bad;
  }
  p += strlen("'shape': (");
  out->ndims = 0;
  out->count = 1;
  while (*p && *p != ')' && out->ndims < 8) {
    char *end;
    unsigned long d = strtoul(p, &end, 10);
    if (end == p) break;
    out->dims[out->ndims++] = d;
    out->count *= d;
    p = end;
    while (*p == ',' || *p == ' ') p++;
  }
  free(h);
  out->data = malloc(out->count * sizeof(float) + 1);
  if (!out->data || fread(out->data, sizeof(float), out->count, f) != out->count) goto bad;
  fclose(f);
  return 0;
bad:
  fprintf(stderr, "%s: truncated or malformed .npy\n", path);
  fclose(f);
  return -1;
}

/* DESIGN.md's f32 tolerance: |a-b| <= 1e-4 |b|, or <= 1e-5 * max(1, max|expected|). */
static int compare(const char *name, const float *got, const Npy *want) {
  float scale = 1.0f;
  for (size_t i = 0; i < want->count; i++) scale = fmaxf(scale, fabsf(want->data[i]));
  size_t bad = 0;
  double worst = 0;
  for (size_t i = 0; i < want->count; i++) {
    double d = fabs((double)got[i] - want->data[i]);
    if (!(d <= 1e-5 * scale || d <= 1e-4 * fabs(want->data[i]))) bad++;
    if (d > worst) worst = d;
  }
  printf("%s: %zu values, max abs diff %.3g vs golden: %s\n", name, want->count, worst,
         bad ? "MISMATCH" : "ok");
  return bad ? -1 : 0;
}

static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* Misuse must come back as an error code with a message. */
static void expect_status(const char *what, EdgertStatus got, EdgertStatus want) {
  const char *msg = edgert_last_error();
  if (got != want || msg == NULL || msg[0] == '\0') {
    fprintf(stderr, "misuse check `%s`: got %s, want %s (message `%s`)\n", what,
            edgert_status_name((int)got), edgert_status_name((int)want), msg ? msg : "(null)");
    failures++;
  } else {
    printf("misuse check `%s`: %s (%s)\n", what, edgert_status_name((int)got), msg);
  }
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s MODEL.onnx INPUT.npy [GOLDEN_DIR]\n", argv[0]);
    return 2;
  }
  printf("edgert %s\n", edgert_version());

  /* Build from ONNX, save, load back. */
  EdgertEngine *built = NULL, *engine = NULL;
  CHECK(edgert_engine_build(argv[1], NULL, 0, &built));
  char engine_path[256];
  snprintf(engine_path, sizeof engine_path, "%s/c-example-%ld.edgert",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
  CHECK(edgert_engine_save(built, engine_path));
  edgert_engine_free(built);
  CHECK(edgert_engine_load(engine_path, &engine));
  remove(engine_path);

  size_t n_in = 0, n_out = 0;
  CHECK(edgert_engine_num_inputs(engine, &n_in));
  CHECK(edgert_engine_num_outputs(engine, &n_out));
  const char *in_name = NULL;
  CHECK(edgert_engine_input_name(engine, 0, &in_name));

  EdgertContext *ctx = NULL;
  CHECK(edgert_context_create(engine, NULL, 0, &ctx));
  EdgertDtype dtype;
  size_t dims[8], ndims = 0;
  CHECK(edgert_context_input_info(ctx, in_name, &dtype, dims, 8, &ndims));
  printf("input `%s`: dtype %d, shape [", in_name, (int)dtype);
  for (size_t i = 0; i < ndims; i++) printf(i ? ",%zu" : "%zu", dims[i]);
  printf("]; %zu outputs\n", n_out);

  Npy image;
  if (read_npy(argv[2], &image) != 0) return 1;
  CHECK(edgert_context_set_input(ctx, in_name, EDGERT_DTYPE_F32, image.data, image.count * sizeof(float)));
  CHECK(edgert_context_run(ctx));

  for (size_t o = 0; o < n_out; o++) {
    const char *name = NULL;
    CHECK(edgert_engine_output_name(engine, o, &name));
    size_t odims[8], ondims = 0, bytes = 0;
    CHECK(edgert_context_output_info(ctx, name, &dtype, odims, 8, &ondims));
    /* Ask for the size first: a too-small buffer is an error that reports what is needed. */
    EdgertStatus s = edgert_context_get_output(ctx, name, NULL, 0, &bytes);
    if (s != EDGERT_STATUS_BUFFER_TOO_SMALL || bytes == 0) {
      fprintf(stderr, "size query for `%s` gave %s\n", name, edgert_status_name((int)s));
      failures++;
      continue;
    }
    float *out = malloc(bytes);
    CHECK(edgert_context_get_output(ctx, name, out, bytes, &bytes));
    size_t count = bytes / sizeof(float);
    printf("output `%s`: %zu floats\n", name, count);
    if (strcmp(name, "classificators") == 0) {
      /* Top three anchors by face score. */
      int best[3] = {-1, -1, -1};
      for (size_t i = 0; i < count; i++)
        for (int k = 0; k < 3; k++)
          if (best[k] < 0 || out[i] > out[best[k]]) {
            for (int j = 2; j > k; j--) best[j] = best[j - 1];
            best[k] = (int)i;
            break;
          }
      printf("top face scores:");
      for (int k = 0; k < 3; k++) printf(" anchor %d logit %.4f (p=%.4f)", best[k], out[best[k]], sigmoid(out[best[k]]));
      printf("\n");
    }
    if (argc > 3) {
      char path[1024];
      snprintf(path, sizeof path, "%s/output_%zu.npy", argv[3], o);
      Npy want;
      if (read_npy(path, &want) != 0 || want.count != count || compare(name, out, &want) != 0) failures++;
      free(want.data);
    }
    free(out);
  }

  /* Misuse: each is an error code and a message, not a crash. */
  EdgertEngine *none = NULL;
  expect_status("load a missing file", edgert_engine_load("/nonexistent/model.edgert", &none), EDGERT_STATUS_IO);
  expect_status("null output pointer", edgert_engine_load(engine_path, NULL), EDGERT_STATUS_NULL_POINTER);
  expect_status("wrong byte count", edgert_context_set_input(ctx, in_name, EDGERT_DTYPE_F32, image.data, 12),
                EDGERT_STATUS_INPUT);
  expect_status("unknown input", edgert_context_set_input(ctx, "nope", EDGERT_DTYPE_F32, image.data, 4),
                EDGERT_STATUS_NOT_FOUND);
  expect_status("bad dtype value", edgert_context_set_input(ctx, in_name, 99, image.data, 4),
                EDGERT_STATUS_INVALID_ARGUMENT);
  expect_status("null context", edgert_context_run(NULL), EDGERT_STATUS_NULL_POINTER);

  edgert_context_free(ctx);
  edgert_engine_free(engine);
  free(image.data);
  printf("c-example: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
