package vmtest

import (
	"strings"
	"testing"
)

func TestParseLdd(t *testing.T) {
	out := `/usr/sbin/xtables-nft-multi:
	linux-vdso.so.1 (0x00007ffd)
	libxtables.so.12 => /lib/x86_64-linux-gnu/libxtables.so.12 (0x00007f)
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)
	/lib64/ld-linux-x86-64.so.2 (0x00007f)
/usr/lib/x86_64-linux-gnu/xtables/libxt_comment.so:
	libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)
	libgone.so.1 => not found
`
	libs, missing := parseLdd([]byte(out))
	if got := strings.Join(libs, " "); got != "/lib/x86_64-linux-gnu/libxtables.so.12 /lib/x86_64-linux-gnu/libc.so.6 /lib64/ld-linux-x86-64.so.2" {
		t.Fatalf("libraries %q", got)
	}
	if len(missing) != 1 || missing[0] != "libgone.so.1" {
		t.Fatalf("missing %q", missing)
	}
}
