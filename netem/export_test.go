package netem

// InNetNS lets the integration tests (package netem_test) run code in a
// test network namespace.
var InNetNS = inNetNS
