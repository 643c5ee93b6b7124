#ifndef CAIRN_VERSION_H
#define CAIRN_VERSION_H
#define CAIRN_VERSION "0.1.0"
#endif
