package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rttlab/rttlab/internal/cli"
	"github.com/rttlab/rttlab/workloads"
)

// Bounds of `agent capture`.
const (
	captureMaxFor     = time.Hour
	captureMaxPackets = 1_000_000
)

type agentCaptureOptions struct {
	iface      string
	peers      []string
	local      string
	dur        time.Duration
	maxPackets int
	stopOnEOF  bool
}

func newAgentCaptureCmd() *cobra.Command {
	o := &agentCaptureOptions{}
	cmd := &cobra.Command{
		Use:   "capture --peer IP[,IP...] --for DURATION",
		Short: "Capture the IPv4 packets to and from peers with kernel stamps; prints them as JSON",
		Long: `Runs in a container's network namespace (inside its agent, CAP_NET_RAW).
Watches --iface with a packet socket and keeps, for each IPv4 packet
between this side (--local, default the interface's address) and a
--peer (one or more; the first is the primary one), the kernel's stamp (CLOCK_REALTIME: captures in two namespaces of one host
share a clock), its direction (sent or received) and a key made of the
bytes no hop changes. It stops after --for, after --max-packets packets
(and says so), or with --stop-on-eof when stdin closes, then prints one
compact JSON object. A line starting "capturing on" on stderr says the
capture has started. The kernel hands packets over in blocks, so the
capture wakes a few times a second, not once per packet. 'rttlab shape
verify' and every task of 'rttlab run' pair the captures of two or three
containers into one-way delays and each request's round trips.`,
		Args:    cobra.NoArgs,
		PreRunE: func(cmd *cobra.Command, args []string) error { return o.validate() },
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&o.iface, "iface", "eth0", "interface to watch")
	cmd.Flags().StringSliceVar(&o.peers, "peer", nil, "the other side's IPv4 address (repeat or comma-separate for more peers)")
	cmd.Flags().StringVar(&o.local, "local", "", "this side's IPv4 address (default: the interface's)")
	cmd.Flags().DurationVar(&o.dur, "for", 0, "longest capture, e.g. 30s")
	cmd.Flags().IntVar(&o.maxPackets, "max-packets", 100000, "packets kept at most")
	cmd.Flags().BoolVar(&o.stopOnEOF, "stop-on-eof", false, "also stop when stdin closes")
	return cmd
}

func (o *agentCaptureOptions) validate() error {
	if len(o.peers) == 0 {
		return cli.Usagef("--peer: give the other side's IPv4 address")
	}
	for _, p := range o.peers {
		if a, err := netip.ParseAddr(p); err != nil || !a.Unmap().Is4() {
			return cli.Usagef("--peer %q: give the other side's IPv4 address", p)
		}
	}
	if a, err := netip.ParseAddr(o.local); o.local != "" && (err != nil || !a.Unmap().Is4()) {
		return cli.Usagef("--local %q: not an IPv4 address", o.local)
	}
	if o.dur <= 0 || o.dur > captureMaxFor {
		return cli.Usagef("--for %v: give a duration up to %v, e.g. 30s", o.dur, captureMaxFor)
	}
	if o.maxPackets < 1 || o.maxPackets > captureMaxPackets {
		return cli.Usagef("--max-packets %d: use 1..%d", o.maxPackets, captureMaxPackets)
	}
	return nil
}

func (o *agentCaptureOptions) run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) error {
	var peers []netip.Addr
	for _, p := range o.peers {
		peers = append(peers, netip.MustParseAddr(p).Unmap())
	}
	local, err := netip.ParseAddr(o.local)
	if o.local == "" {
		local, err = workloads.InterfaceIPv4(o.iface)
	}
	if err != nil {
		return fmt.Errorf("capture: %w", err)
	}
	c, err := workloads.OpenCapture(workloads.CaptureOptions{Iface: o.iface, Local: local.Unmap(), Peer: peers[0], Also: peers[1:], For: o.dur, MaxPackets: o.maxPackets})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s %s: %s <-> %s\n", workloads.CaptureReady, o.iface, local, strings.Join(o.peers, ", "))
	if o.stopOnEOF {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel()
		}()
	}
	res, err := c.Run(ctx)
	if err != nil {
		return err
	}
	if res.Drops > 0 {
		fmt.Fprintf(stderr, "capture: the kernel dropped %d packets it could not hand over in time; the capture is incomplete\n", res.Drops)
	}
	if res.Truncated {
		fmt.Fprintf(stderr, "capture: stopped at the cap of %d packets (--max-packets); later packets were not kept\n", o.maxPackets)
	}
	return json.NewEncoder(stdout).Encode(res)
}
