// Package orchestrator is the shared lab every study stands on; its code
// is in the packages below it:
//
//   - runtime: what the lab needs of any runtime (members, agents beside
//     them in their network namespace, exec, logs, state, removal by run
//     label, images), with no Docker type, and the add-ons a consumer
//     asks for by assertion where one runtime has what another need not
//     (the run's network, listing by label, volumes, image removal, a
//     copy into a member, members on the host's network beside its
//     bridge); runtimefake beside it;
//   - engine: the Docker Engine API behind narrow interfaces, and the
//     Docker runtime over it (engine.Lab), images and their build
//     contexts, the Go toolchain, doctor; enginefake beside it;
//   - stack: the members of a run (built-in apps, own images and compose
//     files), readiness, labels, removal and clean, over the runtime;
//   - shaping: the agents on a stack: links and floor, calibration,
//     snapshots, probes, captures, verification;
//   - agentclient: the one client of the agent, a typed call per verb
//     run by exec in an agent, a wire shaper or the load client;
//   - fakelab (the fake engine scripted as a healthy stack) and enginetest
//     (the real engine for integration tests); internal/fakes holds what
//     enginefake and runtimefake do alike (exec handler choice, label
//     filters, log tails).
//
// No package of the lab imports a study (rtt, placement, workers); the
// test beside this file fails when one does, and when the runtime
// package imports anything of the module or the Docker API.
package orchestrator
