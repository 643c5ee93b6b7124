/* What the command modules of the app layer share (cli.c is the entry). */
#ifndef CAIRN_CLI_PRIV_H
#define CAIRN_CLI_PRIV_H

/* Print "cairn: <fmt with arg>" and the usage to stderr; returns exit 2. */
int cli_usage_error(const char *usage, const char *fmt, const char *arg);
/* MPI_Init_thread as every MPI command of cairn starts it (see cli.c). */
void cli_mpi_init(int *argc, char ***argv, int *threads);

/* cairn eval and cairn predict (cli_infer.c). */
int cli_eval(int argc, char **argv);
int cli_predict(int argc, char **argv);
int cli_generate(int argc, char **argv);
/* cairn plot (plot.c). */
int cli_plot(int argc, char **argv);

#endif
