package shaping

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/rttlab/rttlab/orchestrator/runtime"
	"github.com/rttlab/rttlab/workloads"
)

// DefaultTaskCaptureMaxPackets caps each capture of one task: a task of
// the Redmine mix (120 requests of about 40 round trips) keeps some
// 20,000 packets in the app's namespace.
const DefaultTaskCaptureMaxPackets = 400000

// Endpoint is a container a capture runs in: its ID and name, and its
// address on the stack's network.
type Endpoint struct {
	ID, Name, IP string
}

// TaskCapture is the three captures that run while a task's requests do:
// in the app's namespace (its packets with the database and the client),
// in the database's (with the app) and in the load client's (with the
// app). Together they time each request's round trips on the wire.
type TaskCapture struct {
	app, db, client *captureRun
	flows           workloads.AnatomyFlows
}

// TaskCaptures is what the three captures of a task kept.
type TaskCaptures struct {
	App, DB, Client workloads.Capture
	Flows           workloads.AnatomyFlows
}

// StartTaskCapture starts the three captures concurrently (the app's and
// the database's in their agents, the client's in the client, which needs
// CAP_NET_RAW) and returns once all capture, or why one does not (all
// stopped then). appPort is the app's HTTP port.
func (sh *Shaping) StartTaskCapture(ctx context.Context, d runtime.Execer, client Endpoint, appPort int, maxPackets int) (*TaskCapture, error) {
	app, db := sh.Stack.Role("app"), sh.Stack.Role("db")
	aa, da := sh.Agents["app"], sh.Agents["db"]
	if app == nil || db == nil || aa == nil || da == nil {
		return nil, errors.New("task capture: the stack has no app and database agents")
	}
	var flows workloads.AnatomyFlows
	var err error
	if flows.Client, err = netip.ParseAddr(client.IP); err == nil {
		if flows.App, err = netip.ParseAddr(app.IP); err == nil {
			flows.DB, err = netip.ParseAddr(db.IP)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("task capture: %w", err)
	}
	flows.AppPort, flows.DBPort = uint16(appPort), 5432
	if maxPackets <= 0 {
		maxPackets = DefaultTaskCaptureMaxPackets
	}
	c := &TaskCapture{
		app:    startCapture(ctx, d, aa.ID, aa.Name, DefaultCaptureIface, app.IP, maxPackets, db.IP, client.IP),
		db:     startCapture(ctx, d, da.ID, da.Name, DefaultCaptureIface, db.IP, maxPackets, app.IP),
		client: startCapture(ctx, d, client.ID, client.Name, DefaultCaptureIface, client.IP, maxPackets, app.IP),
		flows:  flows,
	}
	if err := waitReady(ctx, c.app, c.db, c.client); err != nil {
		return nil, err
	}
	return c, nil
}

// Finish stops the captures and returns what they kept.
func (c *TaskCapture) Finish() (TaskCaptures, error) {
	out := TaskCaptures{Flows: c.flows}
	for _, r := range []*captureRun{c.app, c.db, c.client} {
		r.stdin.Close()
	}
	var errs []error
	for _, x := range []struct {
		r   *captureRun
		dst *workloads.Capture
	}{{c.app, &out.App}, {c.db, &out.DB}, {c.client, &out.Client}} {
		var err error
		if *x.dst, err = x.r.result(); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// Abort stops the captures, keeping nothing (safe after Finish).
func (c *TaskCapture) Abort() { abortAll(c.app, c.db, c.client) }
