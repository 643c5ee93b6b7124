/* CAIRN_CLONES: compile a hot loop for the widest vectors the CPU has,
 * picked at load time by an ifunc resolver (GCC and clang's
 * target_clones).  Empty under the sanitizers, whose instrumented
 * resolvers would run before they are set up.  Clones of floating-point
 * code give the same bits only because the build fuses no multiply-add
 * (-ffp-contract=off, GNUmakefile). */
#ifndef CAIRN_CLONES_H
#define CAIRN_CLONES_H

#if defined(__SANITIZE_ADDRESS__)
#define CAIRN_CLONES
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(undefined_behavior_sanitizer)
#define CAIRN_CLONES
#endif
#endif
#ifndef CAIRN_CLONES
#define CAIRN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif

#endif
