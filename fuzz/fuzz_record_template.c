/*
 * fuzz_record_template.c - record templates (src/core/record_template.c):
 * "%{Name}" and "%{Fields[name]}" in any text, rendered on random messages.
 *
 * Input: the template up to the first NUL byte, then a message
 * (fuzz_msg.h). A template that compiles renders; a static one renders the
 * same text for every message (checked against an empty message), and a
 * template without '%' renders as itself.
 */
#include <stdio.h>

#include "fuzz_msg.h"
#include "record_template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  static msg m, empty;
  static bool ready;
  if (!ready) msg_init(&m), msg_init(&empty), ready = true;
  const uint8_t *nul = memchr(data, 0, size);
  size_t len = nul ? (size_t)(nul - data) : size;
  char *text = malloc(len + 1); /* its own: ASan sees a read past it */
  if (!text) abort();
  memcpy(text, data, len);
  text[len] = 0;
  fuzz_in in = {data + len + (nul != NULL), size - len - (nul != NULL)};
  fuzz_msg(&m, &in);

  char err[256];
  record_template *t = record_template_compile(text, err, sizeof err);
  if (t) {
    buf out = {0}, none = {0};
    if (!record_template_render(t, &m, &out)) abort();
    if (record_template_is_static(t)) {
      if (!record_template_render(t, &empty, &none)) abort();
      if (out.len != none.len || (out.len && memcmp(out.data, none.data, out.len)))
        abort();
    }
    if (!memchr(text, '%', len) &&
        (out.len != len || (len && memcmp(out.data, text, len)))) {
      fprintf(stderr, "\"%s\" without %% rendered as \"%.*s\"\n", text,
              (int)out.len, out.data ? out.data : "");
      abort();
    }
    buf_free(&out);
    buf_free(&none);
    record_template_free(t);
  }
  free(text);
  return 0;
}
