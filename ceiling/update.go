package ceiling

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Update applies edit to the ceiling file at path ("always"), keeping every other
// member as it was, in its order: the file is read again under a lock (another
// server may have written it since this one started), the members edit changed
// are replaced, and the new file is written to a temporary file in the same
// directory, synced and renamed over the old one, so that the file is always
// either the old ceiling or the new one. A missing file is created (mode 0600,
// its directory 0700).
func Update(path string, edit func(*File)) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".policy.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("locking the ceiling file: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking the ceiling file: %w", err)
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("reading the ceiling file %s: %w", path, err)
	}
	members, err := orderedMembers(old)
	if err != nil {
		return fmt.Errorf("the ceiling file %s: %v", path, err)
	}
	var f File
	if len(old) > 0 {
		if f, _, err = ReadFile(path); err != nil {
			return err
		}
	}
	before, _ := json.Marshal(f)
	edit(&f)
	after, _ := json.Marshal(f)
	var was, now map[string]json.RawMessage
	json.Unmarshal(before, &was)
	json.Unmarshal(after, &now)
	for k, v := range now {
		if !bytes.Equal(was[k], v) {
			members = members.set(k, v)
		}
	}
	return writeAtomic(path, members.encode())
}

// member is one top-level member of a JSON object, in file order.
type member struct {
	key string
	raw json.RawMessage
}

type membersList []member

// orderedMembers reads the top-level members of a JSON object in order.
func orderedMembers(b []byte) (membersList, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var out membersList
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, member{key, v})
	}
	return out, nil
}

func (ms membersList) set(key string, v json.RawMessage) membersList {
	for i := range ms {
		if ms[i].key == key {
			ms[i].raw = v
			return ms
		}
	}
	return append(ms, member{key, v})
}

func (ms membersList) encode() []byte {
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, m := range ms {
		k, _ := json.Marshal(m.key)
		var v bytes.Buffer
		if json.Indent(&v, m.raw, "  ", "  ") != nil {
			v.Reset()
			v.Write(m.raw)
		}
		fmt.Fprintf(&b, "  %s: %s", k, v.Bytes())
		if i < len(ms)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// writeAtomic replaces path with data: a temporary file in the same directory,
// synced, renamed into place, and the directory synced.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".policy.json.tmp-*")
	if err != nil {
		return fmt.Errorf("writing the ceiling file: %w", err)
	}
	defer os.Remove(tmp.Name())
	mode := os.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if _, err = tmp.Write(data); err == nil {
		if err = tmp.Chmod(mode); err == nil {
			err = tmp.Sync()
		}
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the ceiling file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing the ceiling file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
