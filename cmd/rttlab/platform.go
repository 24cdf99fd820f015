package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/rttlab/rttlab/orchestrator/engine"
)

// platformFlag is --platform of the commands that build images or start a
// stack: checked before anything connects, settled against the engine
// (and the host's emulation checked) before anything is built.
type platformFlag struct {
	raw string
	p   engine.Platform
	// folder is the platform a resumed folder's plan records ("": the
	// engine's own, from before platforms were recorded), emulated whether
	// it ran under emulation, and resume its folder; "" when nothing is
	// resumed.
	folder, resume string
	emulated       bool
}

// resumes makes the flag continue a folder whose plan records platform
// (and whether it ran emulated): the folder's platform is kept, and
// --platform naming another is refused once the engine says what "the
// engine's own" is, as is an engine that would run it the other way
// (natively where it was emulated, or the reverse).
func (pf *platformFlag) resumes(dir, platform string, emulated bool) {
	pf.resume, pf.folder, pf.emulated = dir, platform, emulated
}

func (pf *platformFlag) add(f *pflag.FlagSet) {
	f.StringVar(&pf.raw, "platform", "", "platform of the database and the app, "+strings.Join(engine.Platforms, " or ")+" (default: the engine's own; another runs under qemu emulation, with rttlab's agents on the engine's own)")
}

// parse reads the flag: a platform rttlab does not build is a usage error.
func (pf *platformFlag) parse() error {
	p, err := engine.ParsePlatform(pf.raw)
	if err != nil {
		return usageError{Err: fmt.Errorf("--%w", err)}
	}
	pf.p = p
	return nil
}

// settle is the platform on the engine rt: the engine's own when none was
// asked; a foreign one needs the host's emulation (a usage error naming
// the fix when it is missing), checked before anything is built.
func (pf *platformFlag) settle(ctx context.Context, rt engine.Engine) (engine.Platform, error) {
	if err := pf.parse(); err != nil {
		return engine.Platform{}, err
	}
	info, err := rt.EngineInfo(ctx)
	if err != nil {
		return engine.Platform{}, err
	}
	p, err := pf.p.On(info)
	if err != nil {
		return p, usageError{Err: err}
	}
	if pf.resume != "" {
		fp, err := engine.ParsePlatform(pf.folder)
		if err == nil {
			fp, err = fp.On(info)
		}
		if err != nil {
			return p, usageError{Err: fmt.Errorf("--resume %s: %w", pf.resume, err)}
		}
		if pf.raw != "" && fp.String() != p.String() {
			return p, usagef("--resume %s: the folder ran on %s: leave out --platform %s (a folder is never resumed on another platform)", pf.resume, fp, pf.raw)
		}
		if pf.folder != "" && fp.Foreign() != pf.emulated {
			how := map[bool]string{true: "under emulation", false: "natively"}
			return p, usagef("--resume %s: the folder ran %s %s, and this %s/%s engine would run it %s: resume it on an engine like the one it started on", pf.resume, fp, how[pf.emulated], info.OS, info.Arch, how[fp.Foreign()])
		}
		p = fp
	}
	if err := engine.CheckEmulation(p); err != nil {
		return p, usageError{Err: err}
	}
	pf.p = p
	return p, nil
}
