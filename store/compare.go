package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sys/unix"
)

// Action is a change kind as the seed names it.
type Action string

// Change actions.
const (
	ActionAdd     Action = "add"
	ActionModify  Action = "modify"
	ActionReplace Action = "replace" // the type changed (file, directory, symlink)
	ActionDelete  Action = "delete"
)

// compare says how b differs from a at rel ("" when equal). Content is read only when
// the metadata differs in a way that could still hide equal bytes, or when a's
// metadata cannot be trusted (racy).
func compare(a, b entry, aok, bok bool, ra, rb *root, rel string) (Action, error) {
	if !aok && !bok || aok && bok && sameMeta(a, b) && !racy(a) {
		return "", nil
	}
	if act := metaAction(a, b, aok, bok); act != "" {
		return act, nil
	}
	same, err := sameContent(ra, rb, rel)
	if err != nil || same {
		return "", err
	}
	return ActionModify, nil
}

// metaAction is compare for entries that differ, or are missing on one side, as far
// as metadata decides: "" means two regular files of the same size and mode whose
// content must be read.
func metaAction(a, b entry, aok, bok bool) Action {
	switch {
	case !aok:
		return ActionAdd
	case !bok:
		return ActionDelete
	case a.typ != b.typ:
		return ActionReplace
	case a.typ != unix.S_IFREG || a.perm != b.perm || a.size != b.size:
		return ActionModify
	}
	return ""
}

// diff lists how tree to differs from tree from, per path (no collapsing). Listings are
// merged name by name; a directory listed on one side only contributes all its entries.
// Files whose metadata cannot decide are compared by content afterwards, in parallel.
func diff(from, to tree, rf, rt *root) (map[string]Action, error) {
	out := map[string]Action{}
	var reads []string
	for dir, fl := range from {
		diffListing(dir, fl, to[dir], out, &reads)
	}
	for dir, tl := range to {
		if _, ok := from[dir]; !ok {
			diffListing(dir, nil, tl, out, &reads)
		}
	}
	same := make([]bool, len(reads))
	errs := make([]error, len(reads))
	var wg sync.WaitGroup
	slots := make(chan struct{}, contentReads)
	for i, p := range reads {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			same[i], errs[i] = sameContent(rf, rt, p)
		})
	}
	wg.Wait()
	for i, p := range reads {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if !same[i] {
			out[p] = ActionModify
		}
	}
	return out, nil
}

// contentReads is how many files diff compares by content at once: the reads wait for
// the disk far more than they use the CPU.
const contentReads = 16

// diffListing adds to out the changes between two listings of dir, and to reads the
// paths only their content can decide.
func diffListing(dir string, fl, tl []named, out map[string]Action, reads *[]string) {
	for len(fl) > 0 || len(tl) > 0 {
		var a, b entry
		var aok, bok bool
		var name string
		switch {
		case len(tl) == 0 || len(fl) > 0 && fl[0].name < tl[0].name:
			name, a, aok, fl = fl[0].name, fl[0].e, true, fl[1:]
		case len(fl) == 0 || tl[0].name < fl[0].name:
			name, b, bok, tl = tl[0].name, tl[0].e, true, tl[1:]
		default:
			name, a, b, aok, bok, fl, tl = fl[0].name, fl[0].e, tl[0].e, true, true, fl[1:], tl[1:]
		}
		if aok && bok && sameMeta(a, b) && !racy(a) {
			continue // the common case, decided without building the path
		}
		p := joinRel(dir, name)
		if act := metaAction(a, b, aok, bok); act != "" {
			out[p] = act
		} else {
			*reads = append(*reads, p)
		}
	}
}

func sameContent(ra, rb *root, rel string) (bool, error) {
	fa, err := ra.openFile(rel)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := rb.openFile(rel)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	bufA, bufB := (*bp)[:len(*bp)/2], (*bp)[len(*bp)/2:]
	for {
		na, errA := io.ReadFull(fa, bufA)
		nb, errB := io.ReadFull(fb, bufB)
		if !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		doneA := errors.Is(errA, io.EOF) || errors.Is(errA, io.ErrUnexpectedEOF)
		doneB := errors.Is(errB, io.EOF) || errors.Is(errB, io.ErrUnexpectedEOF)
		if errA != nil && !doneA {
			return false, fmt.Errorf("reading %s: %w", fa.Name(), errA)
		}
		if errB != nil && !doneB {
			return false, fmt.Errorf("reading %s: %w", fb.Name(), errB)
		}
		if doneA || doneB {
			return doneA && doneB, nil
		}
	}
}
