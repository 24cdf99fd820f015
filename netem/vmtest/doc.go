// Package vmtest runs the netem shapers against a real kernel that has
// sch_netem: Debian's stock kernel booted under qemu with software
// emulation, with a static Go /init (this package's own test binary) in
// an initramfs that also carries the kernel modules and the host's
// iptables. It boots the amd64 kernel, and the arm64 build of the same
// kernel under qemu-system-aarch64 for the kernel backend alone (the
// host's iptables are not arm64 binaries). The guest builds the netns
// tests' topology (namespaces A and B joined by a bridge in the VM's root
// namespace), runs each backend through set, read-back, change, per-peer
// delays, floor, refusals and clear with real packets, prints one line
// per check on the console and powers off; the host-side test turns those
// lines into subtests.
//
// The files without _test hold the host side's building blocks: the
// initramfs (newc cpio), the kernel modules' load order, the host files
// the guest needs, qemu, and the console protocol both sides share.
package vmtest
