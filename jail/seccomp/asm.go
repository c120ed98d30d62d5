package seccomp

import (
	"cmp"
	"fmt"
	"slices"

	"golang.org/x/net/bpf"
)

// asm assembles classic BPF with symbolic forward jump targets, so the filter
// reads as a list of checks instead of hand-counted skips.
type asm struct {
	insns   []bpf.Instruction
	jumps   []jumpFix
	labels  map[string]int
	nLabels int // labels made by newLabel
}

// maxInsns is BPF_MAXINSNS, the kernel's limit on a filter's length.
const maxInsns = 4096

type jumpFix struct {
	at          int
	ifTrue, els string // "" falls through to the next instruction
}

func newAsm() *asm { return &asm{labels: map[string]int{}} }

// label names the next instruction.
func (a *asm) label(name string) { a.labels[name] = len(a.insns) }

func (a *asm) emit(ins bpf.Instruction) { a.insns = append(a.insns, ins) }

// newLabel returns a label name not used before.
func (a *asm) newLabel() string {
	a.nLabels++
	return fmt.Sprintf(".L%d", a.nLabels)
}

// dispatchCase sends the value val to label.
type dispatchCase struct {
	val   uint32
	label string
}

// dispatchLinear is the size of table dispatch compares one by one.
const dispatchLinear = 4

// dispatch continues at the label of the case whose value is in A, or at
// otherwise. table must be sorted by value, without repeats. It is a binary
// search: about log2(len(table)) comparisons on any path instead of
// len(table). That matters twice: the kernel runs the filter for every system
// call whose result it could not cache, and when the filter is loaded it runs
// it for every system call number to build that cache, which for a chain of
// ~50 comparisons took most of the filter's ~175 µs load time.
func (a *asm) dispatch(table []dispatchCase, otherwise string) {
	if len(table) <= dispatchLinear {
		for i, c := range table {
			els := ""
			if i == len(table)-1 {
				els = otherwise
			}
			a.jump(bpf.JumpEqual, c.val, c.label, els)
		}
		if len(table) == 0 {
			a.jump(bpf.JumpEqual, 0, otherwise, otherwise)
		}
		return
	}
	mid := len(table) / 2
	upper := a.newLabel()
	a.jump(bpf.JumpGreaterOrEqual, table[mid].val, upper, "")
	a.dispatch(table[:mid], otherwise)
	a.label(upper)
	a.dispatch(table[mid:], otherwise)
}

// dispatchTable sorts table and dispatches on it (see dispatch); a number listed
// twice is an error.
func (a *asm) dispatchTable(table []dispatchCase, otherwise string) error {
	slices.SortFunc(table, func(x, y dispatchCase) int { return cmp.Compare(x.val, y.val) })
	for i := 1; i < len(table); i++ {
		if table[i].val == table[i-1].val {
			return fmt.Errorf("seccomp: system call %d listed twice", table[i].val)
		}
	}
	a.dispatch(table, otherwise)
	return nil
}

// load loads the 32-bit word at off in struct seccomp_data into A.
func (a *asm) load(off uint32) { a.emit(bpf.LoadAbsolute{Off: off, Size: 4}) }

// alu applies op with val to A.
func (a *asm) alu(op bpf.ALUOp, val uint32) { a.emit(bpf.ALUOpConstant{Op: op, Val: val}) }

func (a *asm) ret(v uint32) { a.emit(bpf.RetConstant{Val: v}) }

// jump compares A with val and continues at ifTrue or els.
func (a *asm) jump(cond bpf.JumpTest, val uint32, ifTrue, els string) {
	a.jumps = append(a.jumps, jumpFix{at: len(a.insns), ifTrue: ifTrue, els: els})
	a.emit(bpf.JumpIf{Cond: cond, Val: val})
}

// program resolves labels. Classic BPF only jumps forward, at most 255
// instructions; either violation is a bug in the filter, reported as an error.
func (a *asm) program() ([]bpf.RawInstruction, error) {
	skip := func(from int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := a.labels[label]
		if !ok {
			return 0, fmt.Errorf("seccomp: undefined label %q", label)
		}
		d := to - from - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp: jump to %q spans %d instructions", label, d)
		}
		return uint8(d), nil
	}
	for _, j := range a.jumps {
		ji := a.insns[j.at].(bpf.JumpIf)
		var err error
		if ji.SkipTrue, err = skip(j.at, j.ifTrue); err != nil {
			return nil, err
		}
		if ji.SkipFalse, err = skip(j.at, j.els); err != nil {
			return nil, err
		}
		a.insns[j.at] = ji
	}
	if len(a.insns) > maxInsns {
		return nil, fmt.Errorf("seccomp: filter has %d instructions, more than %d", len(a.insns), maxInsns)
	}
	raw, err := bpf.Assemble(a.insns)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assembling filter: %w", err)
	}
	return raw, nil
}
