#include "cairn/cli.h"

int main(int argc, char **argv) { return cairn_main(argc, argv); }
