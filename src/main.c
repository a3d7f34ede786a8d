/*
 * main.c - the lumberjit command: reads the options and the configuration,
 * then runs the pipeline until its inputs end.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "config.h"
#include "log.h"
#include "pipeline.h"

static const char usage[] =
  "usage: lumberjit -c FILE [--check]\n"
  "\n"
  "A log collector whose decoders and encoders are sandboxed LuaJIT scripts.\n"
  "\n"
  "  -c, --config FILE  the configuration file (Lua tables; see README.md)\n"
  "      --check        validate the configuration and its plugins, then exit\n"
  "  -h, --help         show this help\n"
  "  -V, --version      show the version\n"
  "\n"
  "Exit status: 0 when every input was read to its end, 1 on a configuration\n"
  "or start-up error or a failed input, 2 on a usage error.\n";

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
    {"config", required_argument, NULL, 'c'},
    {"check", no_argument, NULL, 'k'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}
  };
  const char *file = NULL;
  int check = 0, opt, status;
  char err[2048];
  config cfg;
  pipeline *pl;

  while ((opt = getopt_long(argc, argv, "c:hV", longopts, NULL)) != -1) {
    switch (opt) {
    case 'c': file = optarg; break;
    case 'k': check = 1; break;
    case 'h': fputs(usage, stdout); return 0;
    case 'V': printf("lumberjit %s\n", LUMBERJIT_VERSION); return 0;
    default: fputs(usage, stderr); return 2;
    }
  }
  if (!file || optind != argc) {
    fputs(usage, stderr);
    return 2;
  }
  if (config_load(file, &cfg, err, sizeof err) != 0) {
    fprintf(stderr, "lumberjit: %s\n", err);
    return 1;
  }
  if (check) {
    status = pipeline_check(&cfg, err, sizeof err);
    if (status == 0)
      printf("%s: configuration OK (%zu plugins)\n", file, cfg.nplugins);
    else
      fprintf(stderr, "lumberjit: %s\n", err);
    config_free(&cfg);
    return status ? 1 : 0;
  }
  /* A closed reader of stdout is an error on write(2), not a kill. */
  signal(SIGPIPE, SIG_IGN);
  pl = pipeline_create(&cfg, uv_default_loop(), err, sizeof err);
  if (!pl) {
    fprintf(stderr, "lumberjit: %s\n", err);
    config_free(&cfg);
    return 1;
  }
  status = pipeline_run(pl);
  pipeline_destroy(pl);
  uv_loop_close(uv_default_loop());
  config_free(&cfg);
  return status;
}
