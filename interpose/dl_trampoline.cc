// libncclrec.so's exported dlsym and dlvsym: assembly trampolines in front of libc's.
//
// glibc answers dlsym(RTLD_NEXT, name) relative to the return address its dlsym finds on entry.
// A C++ hook that called libc's dlsym would make every RTLD_NEXT lookup in the process relative
// to libncclrec.so, and break the interposers that find "the next malloc" that way (ASan,
// jemalloc, other shims). The trampolines never call: they look at the name's first four bytes
// and the handle, then jump, so the function they jump to runs with the user's return address,
// in every build type.
//   - "nccl..." on a real handle (neither RTLD_DEFAULT nor RTLD_NEXT): jump to the C++ filter in
//     dl_hook.cc, which answers the caller itself. A lookup on a handle does not depend on its
//     caller, so the filter may make it.
//   - anything else: jump to libc's function, found at the first lookup of the process (before
//     any constructor, when a sanitizer runtime looks up its interceptors' targets).
// This file is compiled with -fno-sanitize=all: the first lookup can come before the sanitizer
// runtime is initialized. For the same reason it uses the __atomic builtins, not std::atomic
// (recorder/real_dl.cc says why).
//
// x86_64 and aarch64. Elsewhere nothing is defined: libncclrec.so exports no dlsym, and calls made
// through dlsym handles are not recorded (docs/recorder.md).
#include "recorder/real_dl.h"

#if defined(__x86_64__) || defined(__aarch64__)

extern "C" {

// libc's functions, or nullptr until the first lookup that is not redirected. Read by the
// trampolines with a plain load (aligned, so never torn); every writer stores the same value.
__attribute__((visibility("hidden"))) void* ncclrecDlsymTarget = nullptr;
__attribute__((visibility("hidden"))) void* ncclrecDlvsymTarget = nullptr;

// The slow path of the trampolines: libc's function, nullptr where it cannot be found (the
// trampoline then answers nullptr).
__attribute__((visibility("hidden"), used)) void* ncclrecFindDlsymTarget() {
  void* f = reinterpret_cast<void*>(ncclrec::recorder::libcDlsym());
  __atomic_store_n(&ncclrecDlsymTarget, f, __ATOMIC_RELAXED);
  return f;
}

__attribute__((visibility("hidden"), used)) void* ncclrecFindDlvsymTarget() {
  void* f = reinterpret_cast<void*>(ncclrec::recorder::libcDlvsym());
  __atomic_store_n(&ncclrecDlvsymTarget, f, __ATOMIC_RELAXED);
  return f;
}

}  // extern "C"

// clang-format off
#if defined(__x86_64__)
// Arguments: rdi handle, rsi name, rdx version (dlvsym). On entry rsp = 8 mod 16; the slow path's
// three pushes realign it for the call. endbr64 is a no-op without IBT.
#define NCCLREC_DL_TRAMPOLINE(fn, redirect, target, find) \
  asm(".pushsection .text\n"                              \
      ".globl " #fn "\n"                                  \
      ".type " #fn ", @function\n"                        \
      ".p2align 4\n" #fn ":\n"                            \
      ".cfi_startproc\n"                                  \
      "  endbr64\n"                                       \
      "  testq %rsi, %rsi\n"                              \
      "  jz 1f\n"                                         \
      "  cmpb $0x6e, (%rsi)\n" /* 'n' */                  \
      "  jne 1f\n"                                        \
      "  cmpb $0x63, 1(%rsi)\n" /* 'c' */                 \
      "  jne 1f\n"                                        \
      "  cmpb $0x63, 2(%rsi)\n"                           \
      "  jne 1f\n"                                        \
      "  cmpb $0x6c, 3(%rsi)\n" /* 'l' */                 \
      "  jne 1f\n"                                        \
      "  testq %rdi, %rdi\n" /* RTLD_DEFAULT */           \
      "  jz 1f\n"                                         \
      "  cmpq $-1, %rdi\n" /* RTLD_NEXT */                \
      "  je 1f\n"                                         \
      "  jmp " #redirect "\n"                             \
      "1:\n"                                              \
      "  movq " #target "(%rip), %rax\n"                  \
      "  testq %rax, %rax\n"                              \
      "  jz 2f\n"                                         \
      "  jmp *%rax\n"                                     \
      "2:\n"                                              \
      "  pushq %rdi\n"                                    \
      "  .cfi_adjust_cfa_offset 8\n"                      \
      "  pushq %rsi\n"                                    \
      "  .cfi_adjust_cfa_offset 8\n"                      \
      "  pushq %rdx\n"                                    \
      "  .cfi_adjust_cfa_offset 8\n"                      \
      "  call " #find "\n"                                \
      "  popq %rdx\n"                                     \
      "  .cfi_adjust_cfa_offset -8\n"                     \
      "  popq %rsi\n"                                     \
      "  .cfi_adjust_cfa_offset -8\n"                     \
      "  popq %rdi\n"                                     \
      "  .cfi_adjust_cfa_offset -8\n"                     \
      "  testq %rax, %rax\n"                              \
      "  jz 3f\n"                                         \
      "  jmp *%rax\n"                                     \
      "3:\n"                                              \
      "  xorl %eax, %eax\n"                               \
      "  ret\n"                                           \
      ".cfi_endproc\n"                                    \
      ".size " #fn ", .-" #fn "\n"                        \
      ".popsection\n")
#else
// Arguments: x0 handle, x1 name, x2 version (dlvsym); the return address stays in x30. x16 is the
// register BTI lets an indirect branch land on libc's "bti c" with; "hint 34" is "bti c".
#define NCCLREC_DL_TRAMPOLINE(fn, redirect, target, find) \
  asm(".pushsection .text\n"                              \
      ".globl " #fn "\n"                                  \
      ".type " #fn ", %function\n"                        \
      ".p2align 4\n" #fn ":\n"                            \
      ".cfi_startproc\n"                                  \
      "  hint 34\n"                                       \
      "  cbz x1, 1f\n"                                    \
      "  ldrb w16, [x1]\n"                                \
      "  cmp w16, #0x6e\n"                                \
      "  b.ne 1f\n"                                       \
      "  ldrb w16, [x1, #1]\n"                            \
      "  cmp w16, #0x63\n"                                \
      "  b.ne 1f\n"                                       \
      "  ldrb w16, [x1, #2]\n"                            \
      "  cmp w16, #0x63\n"                                \
      "  b.ne 1f\n"                                       \
      "  ldrb w16, [x1, #3]\n"                            \
      "  cmp w16, #0x6c\n"                                \
      "  b.ne 1f\n"                                       \
      "  cbz x0, 1f\n"                                    \
      "  cmn x0, #1\n"                                    \
      "  b.eq 1f\n"                                       \
      "  b " #redirect "\n"                               \
      "1:\n"                                              \
      "  adrp x16, " #target "\n"                         \
      "  ldr x16, [x16, :lo12:" #target "]\n"             \
      "  cbz x16, 2f\n"                                   \
      "  br x16\n"                                        \
      "2:\n"                                              \
      "  stp x29, x30, [sp, #-48]!\n"                     \
      "  .cfi_def_cfa_offset 48\n"                        \
      "  .cfi_offset 29, -48\n"                           \
      "  .cfi_offset 30, -40\n"                           \
      "  mov x29, sp\n"                                   \
      "  stp x0, x1, [sp, #16]\n"                         \
      "  str x2, [sp, #32]\n"                             \
      "  bl " #find "\n"                                  \
      "  mov x16, x0\n"                                   \
      "  ldp x0, x1, [sp, #16]\n"                         \
      "  ldr x2, [sp, #32]\n"                             \
      "  ldp x29, x30, [sp], #48\n"                       \
      "  .cfi_def_cfa_offset 0\n"                         \
      "  .cfi_restore 29\n"                               \
      "  .cfi_restore 30\n"                               \
      "  cbz x16, 3f\n"                                   \
      "  br x16\n"                                        \
      "3:\n"                                              \
      "  mov x0, #0\n"                                    \
      "  ret\n"                                           \
      ".cfi_endproc\n"                                    \
      ".size " #fn ", .-" #fn "\n"                        \
      ".popsection\n")
#endif

// clang-format on

NCCLREC_DL_TRAMPOLINE(dlsym, ncclrecRedirectDlsym, ncclrecDlsymTarget, ncclrecFindDlsymTarget);
NCCLREC_DL_TRAMPOLINE(dlvsym, ncclrecRedirectDlvsym, ncclrecDlvsymTarget, ncclrecFindDlvsymTarget);

#endif  // x86_64 || aarch64
