/*
 * sandbox_inject.c - inject_message's fast path: the message table read in
 * place, from LuaJIT's own objects.
 *
 * Why: through the Lua API, every key and value of the table cost a
 * lua_next (which looks its key up again to find the next one), a lua_type
 * and a lua_tolstring, each resolving a stack index: the walk was the
 * largest single cost of a decoder call. Here the walk reads the table's
 * nodes and their strings directly, and tells header names apart by
 * pointer, since LuaJIT interns strings: the names' own strings are kept in
 * the registry (sandbox_inject_names), so they stay the ones any key with
 * that text is.
 *
 * What it takes: string headers, number headers (Timestamp, Severity, Pid)
 * and Fields whose values are strings, numbers or booleans; strings may be
 * record spans (sandbox_span.c). Anything else
 * (an array, a typed field, a Uuid, a wrong type, a key that is not a
 * string, an unknown key, a number out of range, the output limit passed,
 * memory refused) makes it give up, and sandbox_api.c's walk through the Lua
 * API builds the message again from the start, with every check and error
 * message. The fast path changes nothing that walk sees: it builds in the
 * scratch message, which that walk resets, and counts its output apart,
 * adding it to the call's only when the message is pushed. So both give
 * the same messages, counts and errors.
 *
 * Safety: the walk only reads. It calls nothing of Lua's, allocates nothing
 * from the state (the message is malloc'd), raises nothing and runs no
 * metamethod, so no GC step or script code can change the table under it.
 * lj_obj.h is the object layout of the LuaJIT this binary links: CMake
 * builds it from the same source tree these headers come from.
 */
#include "lj_obj.h"

#include "sandbox_internal.h"

/* The registry key anchoring the header names' strings. */
#define INJECT_NAMES_KEY "lumberjit.inject_names"
#define FIELDS_NAME MSG_H_COUNT

void sandbox_inject_names(lua_State *L, sandbox *sb)
{
  lua_createtable(L, MSG_H_COUNT + 1, 0);
  for (int h = 0; h <= MSG_H_COUNT; h++) {
    lua_pushstring(L, h == FIELDS_NAME ? "Fields" : msg_header_name(h));
    sb->inject_names[h] = lua_tostring(L, -1);
    lua_rawseti(L, -2, h + 1);
  }
  lua_setfield(L, LUA_REGISTRYINDEX, INJECT_NAMES_KEY);
}

/* The header (or FIELDS_NAME) a key names; MSG_H_COUNT + 1 for others. */
static int header_of(const sandbox *sb, cTValue *key)
{
  const char *name;
  msg_header h;

  if (!tvisstr(key)) return MSG_H_COUNT + 1;
  name = strVdata(key);
  h = msg_header_candidate(name, strV(key)->len);
  if (h != MSG_H_COUNT && sb->inject_names[h] == name) return h;
  return sb->inject_names[FIELDS_NAME] == name ? FIELDS_NAME : MSG_H_COUNT + 1;
}

/* Whether a table has nothing in its array part: keys there are numbers. */
static bool array_empty(const GCtab *t)
{
  cTValue *array = tvref(t->array);

  for (uint32_t i = 0; i < t->asize; i++)
    if (!tvisnil(&array[i])) return false;
  return true;
}

/* A string, or a record span (sandbox_span.c) whose positions are in the
 * record: its text. */
static inline bool text_of(const sandbox *sb, cTValue *value, const char **s,
                           size_t *len)
{
  GCtab *t;
  cTValue *positions;

  if (tvisstr(value)) {
    *s = strVdata(value);
    *len = strV(value)->len;
    return true;
  }
  if (!tvistab(value)) return false;
  t = tabV(value);
  positions = tvref(t->array);
  return (const void *)gcref(t->metatable) == sb->span_mt && t->asize > 2 &&
         tvisnumber(&positions[1]) && tvisnumber(&positions[2]) &&
         sandbox_span_text(sb, numberVnum(&positions[1]), numberVnum(&positions[2]), s, len);
}

static inline bool add_field(const sandbox *sb, msg *m, cTValue *key,
                             cTValue *value, size_t *count)
{
  GCstr *name = strV(key);
  const char *s = NULL;
  size_t len = 0;
  msg_value_type type = tvisnumber(value) ? MSG_DOUBLE
                      : tvisbool(value) ? MSG_BOOL : MSG_STRING;
  msg_field *f;
  msg_value *v;

  if (type == MSG_STRING && !text_of(sb, value, &s, &len)) return false;
  f = msg_add_field(m, strdata(name), name->len, type, 1);
  if (!f) return false;
  v = msg_field_values(m, f);
  *count += name->len + 8;
  if (type == MSG_DOUBLE) {
    v->d = numberVnum(value);
  } else if (type == MSG_BOOL) {
    v->b = boolV(value);
  } else {
    *count += len;
    return msg_store(m, s, len, &v->s);
  }
  return true;
}

/* Names in msg_sort_fields' order. */
static bool name_before(const GCstr *a, const GCstr *b)
{
  return msg_name_before(strdata(a), a->len, strdata(b), b->len);
}

/* Puts the n nodes listed in order (ascending) in name order. A decoder
 * reuses one Fields table, whose keys stay at the same nodes from message
 * to message: the order kept from the last message is taken when it has
 * the same nodes and is still in name order (n - 1 comparisons, where
 * sorting took a tenth of the fast path), else the nodes are sorted. */
static void name_order(sandbox *sb, const GCtab *t, uint32_t *order, uint32_t n)
{
  const Node *node = noderef(t->node);
  uint32_t *kept = sb->field_order;
  bool same = sb->field_order_hmask == t->hmask && sb->field_order_n == n;

  for (uint32_t k = 0; same && k < n; k++)
    same = !tvisnil(&node[kept[k]].val) && tvisstr(&node[kept[k]].key) &&
           (k == 0 || name_before(strV(&node[kept[k - 1]].key),
                                  strV(&node[kept[k]].key)));
  if (same) {
    memcpy(order, kept, n * sizeof *order);
    return;
  }
  for (uint32_t i = 1; i < n; i++) {
    uint32_t x = order[i], j = i;
    for (; j > 0 && name_before(strV(&node[x].key), strV(&node[order[j - 1]].key)); j--)
      order[j] = order[j - 1];
    order[j] = x;
  }
  memcpy(kept, order, n * sizeof *order);
  sb->field_order_n = n;
  sb->field_order_hmask = t->hmask;
}

static bool add_fields(sandbox *sb, msg *m, cTValue *value, size_t *count)
{
  uint32_t order[SANDBOX_FIELD_ORDER_MAX], n = 0, from = m->nfields;
  GCtab *t;
  Node *node;

  if (!tvistab(value)) return false;
  t = tabV(value);
  if (!array_empty(t)) return false;
  node = noderef(t->node);
  for (uint32_t i = 0; i <= t->hmask; i++) {
    if (tvisnil(&node[i].val)) continue;
    if (!tvisstr(&node[i].key)) return false;
    if (n < SANDBOX_FIELD_ORDER_MAX) order[n] = i;
    n++;
  }
  if (n > SANDBOX_FIELD_ORDER_MAX) {
    for (uint32_t i = 0; i <= t->hmask; i++)
      if (!tvisnil(&node[i].val) &&
          !add_field(sb, m, &node[i].key, &node[i].val, count))
        return false;
    msg_sort_fields(m, from);
    return true;
  }
  name_order(sb, t, order, n);
  for (uint32_t k = 0; k < n; k++)
    if (!add_field(sb, m, &node[order[k]].key, &node[order[k]].val, count))
      return false;
  return true;
}

static bool set_number(msg *m, int h, double n)
{
  if (h == MSG_H_TIMESTAMP) {
    if (!sandbox_fits_int64(n)) return false;
    m->timestamp = (int64_t)n;
    return true;
  }
  if (!(n >= INT32_MIN && n <= INT32_MAX)) return false;
  if (h == MSG_H_SEVERITY) m->severity = (int32_t)n, m->has_severity = true;
  else m->pid = (int32_t)n, m->has_pid = true;
  return true;
}

/* One key and value of the message table. */
static bool set_header(sandbox *sb, msg *m, cTValue *key, cTValue *value,
                       size_t *count)
{
  int h = header_of(sb, key);
  const char *s;
  size_t len;

  switch (h) {
  case MSG_H_TIMESTAMP:
  case MSG_H_SEVERITY:
  case MSG_H_PID:
    *count += 8;
    return tvisnumber(value) && set_number(m, h, numberVnum(value));
  case MSG_H_TYPE:
  case MSG_H_LOGGER:
  case MSG_H_PAYLOAD:
  case MSG_H_ENV_VERSION:
  case MSG_H_HOSTNAME:
    if (!text_of(sb, value, &s, &len)) return false;
    *count += len;
    return msg_store(m, s, len, msg_header_span(m, (msg_header)h));
  case FIELDS_NAME:
    return add_fields(sb, m, value, count);
  default:
    return false;
  }
}

bool sandbox_inject_fast(lua_State *L, sandbox *sb)
{
  msg *m = &sb->scratch;
  size_t count = MSG_INJECT_COST;
  GCtab *t;
  Node *node;

  if (L->top <= L->base || !tvistab(L->base)) return false;
  t = tabV(L->base);
  if (!array_empty(t)) return false;
  sandbox_inject_start(sb);
  node = noderef(t->node);
  for (uint32_t i = 0; i <= t->hmask; i++)
    if (!tvisnil(&node[i].val) &&
        !set_header(sb, m, &node[i].key, &node[i].val, &count))
      return false;
  count += sb->emitted;
  if (sb->limits.output_limit && count > sb->limits.output_limit)
    return false;
  if (!sandbox_inject_finish(sb)) return false;
  sb->emitted = count;
  return true;
}
