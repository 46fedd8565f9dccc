// Package ktlsvm proves the kTLS hand-over on real kernels: its tests
// boot the distribution's kernels, which have kTLS as the module tls.ko,
// under qemu, with an initramfs holding the real segorigin binary and the
// client of ./vmclient, and judge what the client prints on the serial
// console. The development machine's own kernel has CONFIG_TLS unset, so
// without this the setsockopt(TCP_ULP, "tls") + TLS_TX path and sendfile
// on a kTLS socket would never run in the suite.
//
// # What it owns
//
//   - FetchKernel: the kernel package named by linux-image-amd64 of a
//     suite (the machine's own sources, Debian 12's 6.1 here, or another
//     Debian suite with package lists of its own in the cache: Debian
//     13's 6.12 and its backports kernel, which rekeys), resolved with
//     apt-cache, fetched with apt-get download (with the parts a split
//     image package names) and unpacked with dpkg-deb into a cache
//     directory, never installed on the host; only
//     the image (decompressed to vmlinux when it can boot by its PVH
//     entry: the kernel's own decompression takes seconds under
//     emulation) and the modules of tls and its ciphers are kept, with
//     their load order from each module's depends=.
//   - BuildInitramfs: busybox (busybox-static), an /init that mounts,
//     insmods the ciphers' modules, makes busybox the kernel's modprobe,
//     brings loopback up and runs the client, and the binaries. The tls
//     module is left where modprobe finds it (/lib/modules/<release>,
//     with a modules.dep), not loaded: the client first starts a server
//     with the shipped systemd unit's privileges (not root,
//     CAP_NET_BIND_SERVICE only), which must serve without kTLS, log how
//     to load the module and not have the kernel load it for it; then it
//     loads tls as the Debian package has it loaded at boot (modprobe of
//     what its modules-load.d file names); every server after that runs
//     with the same privileges and must use kTLS.
//   - ChooseAccel and Boot: qemu-system-x86_64 with KVM where KVM can boot
//     the kernel (hardware virtualisation, and a probe boot that reaches
//     the client), emulation (tcg) elsewhere.
//   - The measure plan (PlanMeasure, booted by BenchmarkKTLSMeasure, not
//     by the suite): the server's resident memory per idle connection at
//     10,000 connections and its system calls per request (the host's
//     strace, copied in with its libraries), plain HTTP against HTTPS on
//     the event loops, in one boot.
//   - The protocol: the client prints "KTLSVM PASS name" or "KTLSVM FAIL
//     name: why" per result and a verdict "KTLSVM DONE PASS|FAIL n";
//     Expected lists every name a plan must report, so a case that never
//     ran fails as surely as one that failed. The kernel's own warnings
//     (WARN_ON, BUG, oops) on the console fail the test too.
//
// # What it never does
//
// It installs nothing (.ci/deps installs qemu-system-x86, busybox-static
// and xz-utils), never touches the host's network or sysctls (the guest's
// are its own), and never skips, except under go test -short (it takes
// minutes of emulated CPU): a kernel that cannot be fetched, a guest that
// does not boot or a client that hangs fails the test with the console.
package ktlsvm
