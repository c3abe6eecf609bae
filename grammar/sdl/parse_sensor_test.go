package sdl

import (
	"strings"
	"testing"
)

// A kernel spec's bindings, in every form the grammar has.
const sensorExample = `entity type Process, Thread
event relation Syscall(Process: Process performer, Thread: Thread, Name: string) traced on performer
sensor Syscall at tracepoint raw_syscalls:sys_enter (Process = tgid, Thread = pid, Name = syscall(arg1))
sensor FileOpen at tracepoint raw_syscalls:sys_enter
    (Process = tgid, Path = user_string(arg0.si), Flags = arg0.dx & 4095)
    when arg1 in (2, 257) and pid != 0
SENSOR RunningOn
    FROM tracepoint sched:sched_switch (Thread = arg2.pid, Process = arg2.tgid, Processor = cpu) KEY arg2.pid
    TO tracepoint sched:sched_switch key arg1.pid;
sensor Span from uprobe "/usr/bin/prog" "main.work" (Process = tgid, N = arg0) to uretprobe "/usr/bin/prog" "main.work" (R = ret)
sensor Call at uprobe "/tmp/a \"b\"" "f" (Process = tgid) when arg0 >= 3 and arg1 < 7 and arg2 <= 1 and arg3 > 0 and arg4 = 1
`

var sensorStmts = []string{
	"entity type Process, Thread",
	"event relation Syscall(Process: Process performer, Thread: Thread, Name: string) traced on performer",
	"sensor Syscall at tracepoint raw_syscalls:sys_enter (Process = tgid, Thread = pid, Name = syscall(arg1))",
	"sensor FileOpen at tracepoint raw_syscalls:sys_enter (Process = tgid, Path = user_string(arg0.si), Flags = arg0.dx & 4095) when arg1 in (2, 257) and pid != 0",
	"sensor RunningOn from tracepoint sched:sched_switch (Thread = arg2.pid, Process = arg2.tgid, Processor = cpu) key arg2.pid to tracepoint sched:sched_switch key arg1.pid",
	`sensor Span from uprobe "/usr/bin/prog" "main.work" (Process = tgid, N = arg0) to uretprobe "/usr/bin/prog" "main.work" (R = ret)`,
	`sensor Call at uprobe "/tmp/a \"b\"" "f" (Process = tgid) when arg0 >= 3 and arg1 < 7 and arg2 <= 1 and arg3 > 0 and arg4 = 1`,
}

func TestParseSensors(t *testing.T) {
	f := frontEnd.ParseOK(t, sensorExample)
	if got, want := strings.TrimSuffix(FormatFile(f), "\n"), strings.Join(sensorStmts, "\n"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	frontEnd.RoundTrip(t, f)

	sys := f.Stmts[2].(*SensorDecl)
	if sys.At != pos(3, 1) || sys.Name.Name != "Syscall" || sys.To != nil || sys.From.Probe.Kind != ProbeTracepoint ||
		sys.From.Probe.Group.Name != "raw_syscalls" || sys.From.Probe.Event.Name != "sys_enter" || sys.From.Probe.At != pos(3, 19) {
		t.Errorf("Syscall: %+v %+v", sys, sys.From.Probe)
	}
	if b := sys.From.Binds[2]; b.Name.Name != "Name" || b.Value.(*BCall).Func.Name != "syscall" || b.Value.Pos() != pos(3, 91) {
		t.Errorf("Syscall Name: %+v", b)
	}
	open := f.Stmts[3].(*SensorDecl)
	flags := open.From.Binds[2].Value.(*BMask)
	if ref := flags.X.(*BRef); len(ref.Path) != 2 || ref.Path[1].Name != "dx" || flags.Mask.Value != 4095 {
		t.Errorf("Flags: %+v", flags)
	}
	if c := open.From.Conds[0]; c.Op != CondIn || len(c.Values) != 2 || c.Values[1].Value != 257 || c.OpPos != pos(6, 15) {
		t.Errorf("when: %+v", c)
	}
	run := f.Stmts[4].(*SensorDecl)
	if run.To == nil || run.From.KeyPos != pos(8, 98) || run.To.Key.(*BRef).Path[0].Name != "arg1" || run.To.Binds != nil {
		t.Errorf("RunningOn: %+v %+v", run.From, run.To)
	}
	span := f.Stmts[5].(*SensorDecl)
	if p := span.To.Probe; p.Kind != ProbeUretprobe || p.Path != "/usr/bin/prog" || p.Symbol != "main.work" || p.PathPos != pos(10, 93) || p.At != pos(10, 83) {
		t.Errorf("Span: %+v", p)
	}
	call := f.Stmts[6].(*SensorDecl)
	if p := call.From.Probe; p.Path != `/tmp/a "b"` || len(call.From.Conds) != 5 || call.From.Conds[0].Op != CondGe {
		t.Errorf("Call: %+v %+v", p, call.From.Conds)
	}
}

func TestSensorErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"no probe", "sensor X at (a = b)",
			[]string{"t.sdl:1:13: unexpected '(', expected one of: 'tracepoint', 'uprobe', 'uretprobe'"}},
		{"no colon", "sensor X at tracepoint sched (a = b)",
			[]string{"t.sdl:1:30: unexpected '(', expected ':'"}},
		{"at or from", "sensor X tracepoint a:b",
			[]string{"t.sdl:1:10: unexpected 'tracepoint', expected one of: 'at', 'from'"}},
		{"bind needs =", "sensor X at tracepoint a:b (a b)",
			[]string{"t.sdl:1:31: unexpected 'b', expected '='"}},
		{"uprobe needs strings", "sensor X at uprobe /bin/ls f",
			[]string{
				"t.sdl:1:20: unexpected character '/'",
				"t.sdl:1:21: unexpected 'bin', expected string",
				"t.sdl:1:24: unexpected character '/'",
			}},
		{"from needs to", "sensor X from tracepoint a:b (a = b)",
			[]string{"t.sdl:1:37: unexpected end of input, expected 'to'"}},
		{"bad numbers", "sensor X at tracepoint a:b (a = c & 1.5) when d = 99999999999999999999999",
			[]string{
				"t.sdl:1:37: want an integer, not '1.5'",
				"t.sdl:1:51: number '99999999999999999999999' is out of range",
			}},
		{"empty strings and escapes", `sensor X at uprobe "" "\q" (a = b)`,
			[]string{
				"t.sdl:1:20: empty string: want a path",
				`t.sdl:1:24: unknown escape sequence '\q' in string`,
			}},
		{"unterminated", `sensor X at uprobe "/bin/ls`,
			[]string{"t.sdl:1:20: unterminated string", "t.sdl:1:28: unexpected end of input, expected string"}},
		{"when needs a comparison", "sensor X at tracepoint a:b (a = b) when c",
			[]string{"t.sdl:1:42: unexpected end of input"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { frontEnd.CheckErrors(t, tt.in, tt.want) })
	}
}

// checkSensor reports the first nil where a sensor binding promises a node.
func checkSensor(x *SensorDecl) string {
	if x.Name == nil || x.From == nil {
		return "incomplete sensor"
	}
	for _, c := range []*ProbeClause{x.From, x.To} {
		if c == nil {
			continue
		}
		p := c.Probe
		if p == nil || p.Kind == 0 || (p.Kind == ProbeTracepoint) != (p.Group != nil && p.Event != nil) {
			return "incomplete probe"
		}
		for _, b := range c.Binds {
			if b == nil || b.Name == nil || !completeBExpr(b.Value) {
				return "incomplete bind"
			}
		}
		if (c.Key != nil) != c.KeyPos.IsValid() || (c.Key != nil && !completeBExpr(c.Key)) {
			return "incomplete key"
		}
		for _, cond := range c.Conds {
			if cond == nil || cond.Op == 0 || len(cond.Values) == 0 || !completeBExpr(cond.X) {
				return "incomplete condition"
			}
		}
	}
	return ""
}

func completeBExpr(x BExpr) bool {
	switch e := x.(type) {
	case *BRef:
		for _, p := range e.Path {
			if p == nil {
				return false
			}
		}
		return len(e.Path) > 0
	case *BCall:
		return e.Func != nil && completeBExpr(e.Arg)
	case *BNum:
		return e.Text != ""
	case *BMask:
		return e.Mask != nil && completeBExpr(e.X)
	}
	return false
}
