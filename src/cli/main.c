/*
 * main.c - the lumberjit command: reads the options and the configuration,
 * then runs the pipeline until its inputs end (or, with --try, one decoder
 * on sample lines: try.h).
 *
 * Before anything else it installs the signal handling (a SIGHUP during a
 * slow start must not kill it) and makes sure fds 0 to 2 are open: a
 * closed one would be reused by the next open(2), and lumberjit would
 * write records into its own event loop's fds. It also raises its soft
 * descriptor limit to the hard one (fd_limit.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "bench.h"
#include "config.h"
#include "fd_limit.h"
#include "help.h"
#include "log.h"
#include "pipeline.h"
#include "registry.h"
#include "service.h"
#include "signals.h"
#include "systemd_listen.h"
#include "systemd_notify.h"
#include "try.h"
#include "version.h"

static const char usage[] =
  "usage: lumberjit -c FILE [--check | --reload]\n"
  "       lumberjit -c FILE --try DECODER [--encode ENCODER] [--watch]\n"
  "                 [--expect GOLDEN [--update]] [SAMPLE...]\n"
  "       lumberjit bench CONFIG [--rate R | --sweep R1,R2,...]\n"
  "                 [--duration S | --count N] [--max-p99 MS]\n"
  "                 [--format w1|syslog|nginx|TEMPLATE] [--write-files N]\n"
  "                 [--json FILE] [--csv FILE] [--plot FILE.svg]\n"
  "\n"
  "A log collector whose decoders and encoders are sandboxed LuaJIT scripts.\n"
  "\n"
  "  -c, --config FILE  the configuration file (Lua tables; see README.md), or\n"
  "                     a directory whose *.lua files, in name order, are one\n"
  "                     configuration\n"
  "      --check        validate the configuration and its plugins, then exit\n"
  "      --reload       validate it, then ask the running lumberjit its pid_file\n"
  "                     names to reload it (SIGHUP: see Running in production)\n"
  "      --try DECODER  run only the decoder DECODER of FILE on each line of the\n"
  "                     SAMPLE files (none or -: standard input) and print every\n"
  "                     message it makes, or why the line was rejected or failed;\n"
  "                     exit status 1 if any line was\n"
  "      --encode ENCODER  with --try: also print each message as ENCODER writes it\n"
  "      --watch        with --try: run again whenever FILE, a plugin's file or a\n"
  "                     SAMPLE (or GOLDEN) changes, until Ctrl-C\n"
  "      --expect GOLDEN  with --try: print only how the output differs from the\n"
  "                     file GOLDEN, as a diff whose hunks are headed\n"
  "                     GOLDEN:LINE: SAMPLE:LINE:; exit status 1 if it does, else\n"
  "                     0 (rejected lines being expected then). A Timestamp the\n"
  "                     decoder did not set prints as 0, said unset, and what a\n"
  "                     broken limit used is not compared: GOLDEN holds from run\n"
  "                     to run\n"
  "      --update       with --expect: write the output to GOLDEN instead\n"
  "\n"
  "bench runs CONFIG's pipeline on its generator_inputs, in steps, and prints\n"
  "for each: the achieved rate, records generated, delivered, dead-lettered\n"
  "and lost (there must be none), latency p50 to max from each line's due\n"
  "time on the schedule to its output's acknowledgement, CPU seconds per\n"
  "million lines by thread (loop, workers, kafka, other) and peak RSS.\n"
  "  --rate R           one step offering R lines a second (50000, 50k, 1.5M);\n"
  "                     without it or --sweep, one step as fast as taken\n"
  "  --sweep R1,R2,...  steps at these rates, until one fails: p99 over\n"
  "                     --max-p99, or under 90% of the rate achieved; the\n"
  "                     highest step that held is the sustainable rate\n"
  "  --duration S       seconds a step (default 5 with a rate), or --count N\n"
  "                     lines a step (default 1000000 without a rate)\n"
  "  --max-p99 MS       the p99 latency a step must stay under\n"
  "  --format F         one generator of w1, syslog or nginx lines, or of\n"
  "                     template F (%{seq} %{iso} %{rfc3164} %{clf} %{word}\n"
  "                     %{host} %{program} %{pid} %{int} %{ip}), in place of\n"
  "                     CONFIG's inputs, with the first one's decoder\n"
  "  --write-files N    N writer threads append the lines (w1, or --format's)\n"
  "                     to the files CONFIG's tail_input reads: its first\n"
  "                     path's '*' made bench1 ... benchN, or its one file\n"
  "                     shared; latency from each line's due time\n"
  "  --json, --csv, --plot FILE  the steps as JSON, CSV, and an SVG plot of\n"
  "                     achieved rate and p99 against the offered rate\n"
  "\n"
  "  -h, --help [TYPE]  show this help, or the keys of plugin type TYPE\n"
  "      --markdown     with --help TYPE: as a Markdown table\n"
  "  -V, --version      show the version\n"
  "\n"
  "Exit status: 0 when every record read was written or dead-lettered, the\n"
  "inputs having reached their end or been stopped by SIGINT or SIGTERM;\n"
  "1 on a configuration or start-up error, a failed input or output, or a\n"
  "record that could be neither written nor dead-lettered; 2 on a usage error.\n";

/* Opens /dev/null on each of fds 0-2 that is closed; true for those. */
static void occupy_closed_stdio(bool closed[3])
{
  for (int fd = 0; fd < 3; fd++) {
    closed[fd] = fcntl(fd, F_GETFD) < 0 && errno == EBADF;
    /* open(2) takes the lowest free fd: this one. */
    if (closed[fd]) open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
  }
}

/* A configured stdin input or stdout output needs its fd open. */
static int check_stdio(const config *cfg, const bool closed[3])
{
  for (size_t i = 0; i < cfg->nplugins; i++) {
    const config_plugin *p = &cfg->plugins[i];
    bool reads = p->type->flags & PLUGIN_STDIN;
    if ((reads && closed[0]) ||
        ((p->type->flags & PLUGIN_STDOUT) && closed[1])) {
      fprintf(stderr, "lumberjit: %s:%d: %s '%s' uses standard %s, which "
              "is closed\n", p->file, p->line, reads ? "input" : "output",
              p->name, reads ? "input" : "output");
      return -1;
    }
  }
  return 0;
}

/* Closes the signal handles and the loop; returns the exit status. */
static int finish(int status)
{
  signals_close();
  systemd_notify_close();
  uv_run(uv_default_loop(), UV_RUN_NOWAIT);
  uv_loop_close(uv_default_loop());
  return status;
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
    {"config", required_argument, NULL, 'c'},
    {"check", no_argument, NULL, 'k'},
    {"reload", no_argument, NULL, 'r'},
    {"try", required_argument, NULL, 't'},
    {"encode", required_argument, NULL, 'e'},
    {"watch", no_argument, NULL, 'w'},
    {"expect", required_argument, NULL, 'x'},
    {"update", no_argument, NULL, 'u'},
    {"help", no_argument, NULL, 'h'},
    {"markdown", no_argument, NULL, 'm'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}
  };
  const char *file = NULL;
  try_options try = {0};
  int check = 0, reload = 0, help = 0, markdown = 0, opt, status;
  char err[2048];
  bool closed[3];
  config cfg;

  occupy_closed_stdio(closed);
  log_detect_journal();
  systemd_listen_take();
  fd_limit_raise();
  if (signals_start(uv_default_loop()) != 0) {
    fputs("lumberjit: cannot install signal handlers\n", stderr);
    return 1;
  }
  if (argc > 1 && strcmp(argv[1], "bench") == 0)
    return finish(bench_main(argc - 1, argv + 1));
  while ((opt = getopt_long(argc, argv, "c:hV", longopts, NULL)) != -1) {
    switch (opt) {
    case 'c': file = optarg; break;
    case 'k': check = 1; break;
    case 'r': reload = 1; break;
    case 't': try.decoder = optarg; break;
    case 'e': try.encoder = optarg; break;
    case 'w': try.watch = true; break;
    case 'x': try.expect = optarg; break;
    case 'u': try.update = true; break;
    case 'h': help = 1; break;
    case 'm': markdown = 1; break;
    case 'V': version_print(stdout); return 0;
    default: fputs(usage, stderr); return 2;
    }
  }
  /* --help, or --help TYPE. */
  if (help && optind + 1 >= argc && !file && !check && !reload &&
      !try.decoder) {
    if (optind == argc && !markdown) {
      help_usage(usage, stdout);
      return 0;
    }
    if (optind + 1 == argc)
      return help_type(argv[optind], markdown, stdout) == 0 ? 0 : 2;
  }
  if (help || markdown) {
    fputs(usage, stderr);
    return 2;
  }
  /* --expect and --update need what they go with: said plainly, as the
   * usage would not tell which was missing. */
  if (try.update && !try.expect) {
    fputs("lumberjit: --update goes with --expect GOLDEN: it writes GOLDEN\n",
          stderr);
    return 2;
  }
  if (try.expect && !try.decoder) {
    fputs("lumberjit: --expect goes with --try DECODER: it compares what the "
          "decoder makes\n", stderr);
    return 2;
  }
  /* Sample operands, --encode and --watch belong to --try. */
  if (!file || (!try.decoder && (optind != argc || try.encoder || try.watch)) ||
      ((try.decoder || reload) && check) || (try.decoder && reload)) {
    fputs(usage, stderr);
    return 2;
  }
  if (reload) return service_signal_reload(file);
  if (try.decoder) {
    try.config_path = file;
    try.samples = argv + optind;
    try.nsamples = (size_t)(argc - optind);
    status = try_run(&try);
    return finish(status);
  }
  if (config_load(file, registry_types, &cfg, err, sizeof err) != 0) {
    fprintf(stderr, "lumberjit: %s\n", err);
    return 1;
  }
  if (check_stdio(&cfg, closed) != 0) {
    config_free(&cfg);
    return 1;
  }
  log_set_level((log_level)cfg.log_level);
  if (check) {
    status = pipeline_check(&cfg, err, sizeof err);
    if (status == 0)
      printf("%s: configuration OK (%zu plugins)\n", file, cfg.nplugins);
    else
      fprintf(stderr, "lumberjit: %s\n", err);
    config_free(&cfg);
    return status ? 1 : 0;
  }
  return finish(service_run(file, &cfg));
}
