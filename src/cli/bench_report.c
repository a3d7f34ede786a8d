/*
 * bench_report.c - what `lumberjit bench` reports (bench.h): the table on
 * standard output, and the JSON, CSV and SVG files.
 *
 * CPU is given per million lines generated, by thread, as the README's
 * run line gives it for the process. The plot is drawn by hand, SVG being
 * text: achieved rate and p99 latency against the offered rate, each on
 * its own axis, the offered rate itself as the diagonal a pipeline that
 * keeps up follows, and the --max-p99 bound and the sustainable rate
 * marked.
 */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <string.h>

static const char *const quantile_names[LATENCY_REPORTED] = {
  "p50", "p95", "p99", "p99.9", "max"};

static double per_million(const bench_step *s, int kind)
{
  return s->generated ? s->cpu[kind] * 1e6 / (double)s->generated : 0;
}

/* The kinds of thread a run reports: the writers only when it had some. */
static int kinds(const bench_run *run)
{
  return run->write_files ? BENCH_THREAD_KINDS : BENCH_WRITERS;
}

/* What a step's latency_from means, for the table's note. */
static const char *latency_origin(const char *from)
{
  if (strcmp(from, "due") == 0) return "due time on the schedule";
  if (strcmp(from, "written") == 0) return "write";
  return "read";
}

void bench_print_table(const bench_run *run, FILE *f)
{
  fprintf(f, "%10s %10s %10s %10s %6s %5s %8s %8s %8s %8s %8s", "offered/s",
          "achieved/s", "generated", "delivered", "dead", "lost", "p50 ms",
          "p95 ms", "p99 ms", "p99.9 ms", "max ms");
  for (int k = 0; k < kinds(run); k++)
    fprintf(f, " %8s", bench_thread_names[k]);
  fprintf(f, " %7s %s\n", "RSS MiB", "step");
  for (size_t i = 0; i < run->nsteps; i++) {
    const bench_step *s = &run->steps[i];
    char offered[32] = "max";
    if (s->offered) snprintf(offered, sizeof offered, "%.0f", s->offered);
    fprintf(f, "%10s %10.0f %10llu %10llu %6llu %5llu", offered, s->achieved,
            (unsigned long long)s->generated, (unsigned long long)s->delivered,
            (unsigned long long)s->dead_lettered, (unsigned long long)s->lost);
    for (int q = 0; q < LATENCY_REPORTED; q++) fprintf(f, " %8.1f", s->latency_ms[q]);
    for (int k = 0; k < kinds(run); k++) fprintf(f, " %8.2f", per_million(s, k));
    fprintf(f, " %7.1f %s\n", s->peak_rss_mib,
            s->status ? "FAILED" : s->lost ? "LOST" : s->passed ? "ok" : "over");
  }
  fprintf(f, "CPU: seconds per million lines, by thread. Latency: from each "
          "line's %s to its output's acknowledgement (the output with the "
          "worst p99).\n", latency_origin(run->steps[0].latency_from));
  if (run->nrates > 1 || run->max_p99_ms) {
    if (run->sustainable)
      fprintf(f, "sustainable rate: %.0f lines/s", run->sustainable);
    else
      fprintf(f, "sustainable rate: none of the steps");
    fprintf(f, " (achieved >= %.0f%% of offered", BENCH_RATE_TOLERANCE * 100);
    if (run->max_p99_ms) fprintf(f, ", p99 <= %g ms", run->max_p99_ms);
    fprintf(f, ", nothing lost)\n");
  }
}

static FILE *open_out(const char *path, char *err, size_t errlen)
{
  FILE *f = fopen(path, "w");

  if (!f) snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
  return f;
}

static int close_out(FILE *f, const char *path, char *err, size_t errlen)
{
  bool failed = ferror(f) != 0;

  if (fclose(f) != 0 || failed) {
    snprintf(err, errlen, "cannot write %s", path);
    return -1;
  }
  return 0;
}

/* s as a JSON string (or XML text, xml true), with its quotes for JSON. */
static void put_escaped(FILE *f, const char *s, bool xml)
{
  if (!xml) fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (xml && c == '&') fputs("&amp;", f);
    else if (xml && c == '<') fputs("&lt;", f);
    else if (xml && c == '>') fputs("&gt;", f);
    else if (!xml && (c == '"' || c == '\\')) fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, xml ? " " : "\\u%04x", c);
    else fputc(c, f);
  }
  if (!xml) fputc('"', f);
}

int bench_write_json(const bench_run *run, const char *path, char *err,
                     size_t errlen)
{
  FILE *f = open_out(path, err, errlen);

  if (!f) return -1;
  fputs("{\n  \"config\": ", f);
  put_escaped(f, run->config_path, false);
  fputs(",\n  \"format\": ", f);
  if (run->format) put_escaped(f, run->format, false);
  else fputs("null", f);
  fprintf(f, ",\n  \"write_files\": %u,\n  \"max_p99_ms\": ", run->write_files);
  if (run->max_p99_ms) fprintf(f, "%g", run->max_p99_ms);
  else fputs("null", f);
  fputs(",\n  \"sustainable_rate\": ", f);
  if (run->sustainable) fprintf(f, "%.0f", run->sustainable);
  else fputs("null", f);
  fputs(",\n  \"steps\": [", f);
  for (size_t i = 0; i < run->nsteps; i++) {
    const bench_step *s = &run->steps[i];
    fprintf(f, "%s\n    {\"offered\": %.0f, \"achieved\": %.1f, \"seconds\": "
            "%.3f, \"generated\": %llu, \"delivered\": %llu, "
            "\"dead_lettered\": %llu, \"failed\": %llu, \"lost\": %llu,\n"
            "     \"latency_from\": \"%s\", \"latency_ms\": {",
            i ? "," : "", s->offered, s->achieved, s->seconds,
            (unsigned long long)s->generated, (unsigned long long)s->delivered,
            (unsigned long long)s->dead_lettered,
            (unsigned long long)s->failed, (unsigned long long)s->lost,
            s->latency_from);
    for (int q = 0; q < LATENCY_REPORTED; q++)
      fprintf(f, "%s\"%s\": %.3f", q ? ", " : "", quantile_names[q],
              s->latency_ms[q]);
    fputs("},\n     \"cpu_seconds\": {", f);
    for (int k = 0; k < kinds(run); k++)
      fprintf(f, "%s\"%s\": %.3f", k ? ", " : "", bench_thread_names[k], s->cpu[k]);
    fputs("},\n     \"cpu_seconds_per_million\": {", f);
    for (int k = 0; k < kinds(run); k++)
      fprintf(f, "%s\"%s\": %.3f", k ? ", " : "", bench_thread_names[k],
              per_million(s, k));
    fprintf(f, "},\n     \"peak_rss_mib\": %.1f, \"status\": %d, \"passed\": %s}",
            s->peak_rss_mib, s->status, s->passed ? "true" : "false");
  }
  fputs("\n  ]\n}\n", f);
  return close_out(f, path, err, errlen);
}

int bench_write_csv(const bench_run *run, const char *path, char *err,
                    size_t errlen)
{
  FILE *f = open_out(path, err, errlen);

  if (!f) return -1;
  fputs("offered,achieved,seconds,generated,delivered,dead_lettered,failed,"
        "lost,latency_from,p50_ms,p95_ms,p99_ms,p99_9_ms,max_ms", f);
  for (int k = 0; k < kinds(run); k++)
    fprintf(f, ",cpu_%s_s_per_million", bench_thread_names[k]);
  fputs(",peak_rss_mib,status,passed\n", f);
  for (size_t i = 0; i < run->nsteps; i++) {
    const bench_step *s = &run->steps[i];
    fprintf(f, "%.0f,%.1f,%.3f,%llu,%llu,%llu,%llu,%llu,%s", s->offered,
            s->achieved, s->seconds, (unsigned long long)s->generated,
            (unsigned long long)s->delivered,
            (unsigned long long)s->dead_lettered,
            (unsigned long long)s->failed, (unsigned long long)s->lost,
            s->latency_from);
    for (int q = 0; q < LATENCY_REPORTED; q++) fprintf(f, ",%.3f", s->latency_ms[q]);
    for (int k = 0; k < kinds(run); k++) fprintf(f, ",%.3f", per_million(s, k));
    fprintf(f, ",%.1f,%d,%s\n", s->peak_rss_mib, s->status,
            s->passed ? "true" : "false");
  }
  return close_out(f, path, err, errlen);
}

/* ---- the plot ---- */

#define W 760
#define H 440
#define LEFT 90
#define RIGHT 80
#define TOP 50
#define BOTTOM 70
#define PW (W - LEFT - RIGHT)
#define PH (H - TOP - BOTTOM)

/* A round top for an axis over [0, v]: 1, 2 or 5 times a power of ten. */
static double nice_top(double v)
{
  double p, m;

  if (!(v > 0)) return 1;
  p = pow(10, floor(log10(v)));
  m = v / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static double x_of(const bench_step *s)
{
  return s->offered ? s->offered : s->achieved;
}

/* "250k", "1.5M": a tick's label. */
static void tick_label(double v, char *out, size_t len)
{
  if (v >= 1e6) snprintf(out, len, "%gM", v / 1e6);
  else if (v >= 1e3) snprintf(out, len, "%gk", v / 1e3);
  else snprintf(out, len, "%g", v);
}

static void axes(FILE *f, double xmax, double ymax, double lmax)
{
  char label[32];

  fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
          "stroke=\"#444\"/>\n", LEFT, TOP, PW, PH);
  for (int i = 0; i <= 5; i++) {
    double fx = LEFT + PW * i / 5.0, fy = TOP + PH - PH * i / 5.0;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"#ddd\"/>\n", fx, TOP, fx, TOP + PH);
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
            "stroke=\"#ddd\"/>\n", LEFT, fy, LEFT + PW, fy);
    tick_label(xmax * i / 5, label, sizeof label);
    fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
            fx, TOP + PH + 18, label);
    tick_label(ymax * i / 5, label, sizeof label);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#1f5fa8\">"
            "%s</text>\n", LEFT - 6, fy + 4, label);
    fprintf(f, "<text x=\"%d\" y=\"%.1f\" fill=\"#c0392b\">%g</text>\n",
            LEFT + PW + 6, fy + 4, lmax * i / 5);
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">offered rate "
          "(lines/s)</text>\n", LEFT + PW / 2, H - 28);
  fprintf(f, "<text transform=\"translate(22 %d) rotate(-90)\" "
          "text-anchor=\"middle\" fill=\"#1f5fa8\">achieved rate (lines/s)"
          "</text>\n", TOP + PH / 2);
  fprintf(f, "<text transform=\"translate(%d %d) rotate(90)\" "
          "text-anchor=\"middle\" fill=\"#c0392b\">p99 latency (ms)</text>\n",
          W - 22, TOP + PH / 2);
}

/* One series as a line with a dot at each step. */
static void series(FILE *f, const bench_run *run, double xmax, double ymax,
                   bool latency, const char *colour)
{
  fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
          "points=\"", colour);
  for (size_t i = 0; i < run->nsteps; i++) {
    const bench_step *s = &run->steps[i];
    double v = latency ? s->latency_ms[2] : s->achieved;
    fprintf(f, "%s%.1f,%.1f", i ? " " : "", LEFT + PW * x_of(s) / xmax,
            TOP + PH - PH * fmin(v / ymax, 1));
  }
  fputs("\"/>\n", f);
  for (size_t i = 0; i < run->nsteps; i++) {
    const bench_step *s = &run->steps[i];
    double v = latency ? s->latency_ms[2] : s->achieved;
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n",
            LEFT + PW * x_of(s) / xmax, TOP + PH - PH * fmin(v / ymax, 1),
            colour);
  }
}

int bench_write_plot(const bench_run *run, const char *path, char *err,
                     size_t errlen)
{
  double xmax = 0, ymax = 0, lmax = run->max_p99_ms;
  FILE *f;

  for (size_t i = 0; i < run->nsteps; i++) {
    const bench_step *s = &run->steps[i];
    xmax = fmax(xmax, x_of(s));
    ymax = fmax(ymax, fmax(s->achieved, s->offered));
    lmax = fmax(lmax, s->latency_ms[2]);
  }
  xmax = nice_top(xmax);
  ymax = nice_top(ymax);
  lmax = nice_top(lmax);
  if (!(f = open_out(path, err, errlen))) return -1;
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H, W, H);
  fputs("<text x=\"380\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">"
        "lumberjit bench: ", f);
  put_escaped(f, run->config_path, true);
  fputs("</text>\n", f);
  axes(f, xmax, ymax, lmax);
  /* A pipeline that keeps up delivers what is offered. */
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#999\" "
          "stroke-dasharray=\"4 4\"/>\n", LEFT, TOP + PH,
          LEFT + PW * fmin(ymax / xmax, 1), TOP + PH - PH * fmin(xmax / ymax, 1));
  if (run->max_p99_ms) {
    double y = TOP + PH - PH * run->max_p99_ms / lmax;
    fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
            "stroke=\"#c0392b\" stroke-dasharray=\"6 3\"/>\n"
            "<text x=\"%d\" y=\"%.1f\" fill=\"#c0392b\">--max-p99 %g ms</text>\n",
            LEFT, y, LEFT + PW, y, LEFT + 6, y - 4, run->max_p99_ms);
  }
  if (run->sustainable) {
    double x = LEFT + PW * run->sustainable / xmax;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"#27ae60\" stroke-dasharray=\"2 3\"/>\n"
            "<text x=\"%.1f\" y=\"%d\" fill=\"#27ae60\">sustainable %.0f/s"
            "</text>\n", x, TOP, x, TOP + PH, x + 4, TOP + 14, run->sustainable);
  }
  series(f, run, xmax, ymax, false, "#1f5fa8");
  series(f, run, xmax, lmax, true, "#c0392b");
  fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#1f5fa8\">&#9679; achieved rate"
          "</text>\n<text x=\"%d\" y=\"%d\" fill=\"#c0392b\">&#9679; p99 latency"
          "</text>\n<text x=\"%d\" y=\"%d\" fill=\"#999\">- - offered</text>\n",
          LEFT, H - 8, LEFT + 140, H - 8, LEFT + 280, H - 8);
  fputs("</svg>\n", f);
  return close_out(f, path, err, errlen);
}
