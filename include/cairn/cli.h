/* The library's entry point: everything `cairn` does, given its arguments.
 * Returns the process exit code (0, 2 bad input, 3 runtime failure). */
#ifndef CAIRN_CLI_H
#define CAIRN_CLI_H

int cairn_main(int argc, char **argv);

#endif
