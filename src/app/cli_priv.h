/* What the command modules of the app layer share (cli.c is the entry). */
#ifndef CAIRN_CLI_PRIV_H
#define CAIRN_CLI_PRIV_H

/* cairn plot (plot.c). */
int cli_plot(int argc, char **argv);

#endif
