/* What the command modules of the app layer share (cli.c is the entry). */
#ifndef CAIRN_CLI_PRIV_H
#define CAIRN_CLI_PRIV_H

/* cairn plot (plot.c). */
int cli_plot(int argc, char **argv);

/* cairn data import (import_cli.c), and its part of `cairn data`'s usage. */
int cli_data_import(int argc, char **argv);
extern const char cli_import_usage[];

#endif
