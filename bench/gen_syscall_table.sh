#!/bin/sh
# Regenerate src/observe/syscall_table.rs from the installed kernel UAPI
# header, plus the x86_64 numbers newer than that header (syscall_64.tbl).
set -eu
H=${1:-/usr/include/x86_64-linux-gnu/asm/unistd_64.h}
OUT=${2:-src/observe/syscall_table.rs}
{
echo '//! x86_64 system call numbers to names.'
echo '//!'
echo '//! Generated from the kernel UAPI header `asm/unistd_64.h` (linux-libc-dev, up to 450)'
echo '//! plus the numbers added to arch/x86/entry/syscalls/syscall_64.tbl since (451-469).'
echo '//! Regenerate with bench/gen_syscall_table.sh. A number missing here prints as'
echo '//! `syscall_<nr>`, never as a wrong name.'
echo
echo '/// Index = syscall number; "" = unassigned.'
echo 'pub const X86_64: &[&str] = &['
{ grep -E '^#define __NR_[a-z0-9_]+ [0-9]+$' "$H" | awk '{print $3, substr($2,6)}'
  printf '%s\n' "451 cachestat" "452 fchmodat2" "453 map_shadow_stack" "454 futex_wake" \
    "455 futex_wait" "456 futex_requeue" "457 statmount" "458 listmount" \
    "459 lsm_get_self_attr" "460 lsm_set_self_attr" "461 lsm_list_modules" "462 mseal" \
    "463 setxattrat" "464 getxattrat" "465 listxattrat" "466 removexattrat" \
    "467 open_tree_attr" "468 file_getattr" "469 file_setattr"
} | sort -n -u | awk 'BEGIN{n=0} { while (n < $1) { printf "    \"\", // %d\n", n; n++ } printf "    \"%s\", // %d\n", $2, $1; n++ }'
echo '];'
} > "$OUT"
