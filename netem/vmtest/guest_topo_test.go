package vmtest

import (
	"fmt"
	"net/netip"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// topology is the netns tests' pair of namespaces, here joined through a
// bridge in the VM's root namespace:
//
//	A: a0 10.77.0.1, 10.77.0.3, fd77::1 -- va [br0] vb -- b0 10.77.0.2, fd77::2 :B
type topology struct {
	nsA, nsB     string // namespace files
	linkA, linkB string // the namespaces' ends of the veths
	bridge       string // in the root namespace
	a1, a2, a6   netip.Addr
	b, b6        netip.Addr
}

func (t *topology) String() string {
	return fmt.Sprintf("A %s (%s, %s, %s) -- %s -- B %s (%s, %s)", t.linkA, t.a1, t.a2, t.a6, t.bridge, t.linkB, t.b, t.b6)
}

func newTopology() (*topology, error) {
	t := &topology{
		nsA: "/run/netns/A", nsB: "/run/netns/B", linkA: "a0", linkB: "b0", bridge: "br0",
		a1: netip.MustParseAddr("10.77.0.1"), a2: netip.MustParseAddr("10.77.0.3"), a6: netip.MustParseAddr("fd77::1"),
		b: netip.MustParseAddr("10.77.0.2"), b6: netip.MustParseAddr("fd77::2"),
	}
	for _, p := range []string{t.nsA, t.nsB} {
		if err := newNamedNetNS(p); err != nil {
			return nil, err
		}
	}
	root, err := netlink.NewHandle(unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	defer root.Close()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: t.bridge}}
	if err := root.LinkAdd(br); err != nil {
		return nil, fmt.Errorf("add bridge %s: %w", t.bridge, err)
	}
	if err := root.LinkSetUp(br); err != nil {
		return nil, fmt.Errorf("bridge %s up: %w", t.bridge, err)
	}
	side := func(ns, port, end string, addrs ...string) error {
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: port, MasterIndex: br.Index}, PeerName: end}
		if err := root.LinkAdd(v); err != nil {
			return fmt.Errorf("add veth %s/%s: %w", port, end, err)
		}
		if err := root.LinkSetUp(v); err != nil {
			return fmt.Errorf("%s up: %w", port, err)
		}
		peer, err := root.LinkByName(end)
		if err != nil {
			return fmt.Errorf("veth end %s: %w", end, err)
		}
		fd, err := os.Open(ns)
		if err != nil {
			return fmt.Errorf("open %s: %w", ns, err)
		}
		defer fd.Close()
		if err := root.LinkSetNsFd(peer, int(fd.Fd())); err != nil {
			return fmt.Errorf("move %s into %s: %w", end, ns, err)
		}
		h, err := netlink.NewHandleAt(netns.NsHandle(fd.Fd()), unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlink in %s: %w", ns, err)
		}
		defer h.Close()
		l, err := h.LinkByName(end)
		if err != nil {
			return fmt.Errorf("%s in %s: %w", end, ns, err)
		}
		for _, a := range addrs {
			addr, err := netlink.ParseAddr(a)
			if err != nil {
				return fmt.Errorf("address %s: %w", a, err)
			}
			if addr.IP.To4() == nil {
				addr.Flags = unix.IFA_F_NODAD
			}
			if err := h.AddrAdd(l, addr); err != nil {
				return fmt.Errorf("add %s to %s: %w", a, end, err)
			}
		}
		lo, err := h.LinkByName("lo")
		if err != nil {
			return fmt.Errorf("lo in %s: %w", ns, err)
		}
		for _, x := range []netlink.Link{lo, l} {
			if err := h.LinkSetUp(x); err != nil {
				return fmt.Errorf("%s up in %s: %w", x.Attrs().Name, ns, err)
			}
		}
		return nil
	}
	if err := side(t.nsA, "va", t.linkA, "10.77.0.1/24", "10.77.0.3/24", "fd77::1/64"); err != nil {
		return nil, err
	}
	if err := side(t.nsB, "vb", t.linkB, "10.77.0.2/24", "fd77::2/64"); err != nil {
		return nil, err
	}
	// The bridge ports hand every packet to one CPU's backlog (RPS).
	// Without it a veth delivers each packet to the backlog of the CPU
	// that sent it, and netem sends from whichever CPU its timer or the
	// next enqueue runs on: with two emulated CPUs, one of which the host
	// stalls now and then, a few datagrams in 150 then overtook each other
	// on a steady delay (none with one CPU, none with RPS). That order is
	// the kernel's, not the shaper's, which is what the streams check.
	for _, port := range []string{"va", "vb"} {
		if err := os.WriteFile("/sys/class/net/"+port+"/queues/rx-0/rps_cpus", []byte("1"), 0o644); err != nil {
			return nil, fmt.Errorf("RPS on %s: %w", port, err)
		}
	}
	for _, ns := range []string{t.nsA, t.nsB} {
		if err := startEchoServers(ns); err != nil {
			return nil, fmt.Errorf("in %s: %w", ns, err)
		}
	}
	return t, nil
}

// newNamedNetNS creates a network namespace and keeps it alive by
// bind-mounting it on path, as "ip netns add" does.
func newNamedNetNS(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	f.Close()
	return onOwnThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare network namespace: %w", err)
		}
		if err := unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind network namespace on %s: %w", path, err)
		}
		return nil
	})
}

// onOwnThread runs fn on an OS thread that is thrown away afterwards, for
// changes to the thread's namespaces.
func onOwnThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		errc <- fn()
	}()
	return <-errc
}

// inNS runs fn on a thread inside the namespace at path; sockets fn opens
// stay in that namespace.
func inNS(path string, fn func() error) error {
	return onOwnThread(func() error {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("open %s: %w", path, err)
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter %s: %w", path, err)
		}
		return fn()
	})
}
