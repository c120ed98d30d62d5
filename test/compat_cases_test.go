package test

// compatCases are the everyday programs of the compatibility test
// (compat_test.go): each does a small real job in a fresh directory, its
// working directory, and exits 0 when the job is done. Scripts use relative
// paths only, so that the same text runs bare (in the directory itself) and
// inside (the directory mounted read-write). needs are the programs a case
// runs; a case whose programs are missing here is skipped, saying so (.ci/run
// installs them all).
var compatCases = []compatCase{
	// Python's process pools and shared state: POSIX semaphores and shared
	// memory in /dev/shm, a unix socket for the manager.
	{name: "python-pool", needs: []string{"python3"}, landlockOnly: "no /dev/shm of its own (POSIX semaphores)",
		script: `python3 -c 'from multiprocessing import Pool
if __name__ == "__main__":
    with Pool(2) as p: print(sum(p.map(abs, range(-50, 50))))'`},
	{name: "python-manager", needs: []string{"python3"},
		script: `python3 -c 'from multiprocessing import Manager
if __name__ == "__main__":
    with Manager() as m:
        d = m.dict(); d["a"] = 1; print(d["a"])'`},
	{name: "python-shared-memory", needs: []string{"python3"}, landlockOnly: "no /dev/shm of its own",
		script: `python3 -c 'from multiprocessing import shared_memory as s
x = s.SharedMemory(create=True, size=64); x.buf[0] = 7
y = s.SharedMemory(x.name); print(y.buf[0]); y.close(); x.close(); x.unlink()'`},
	{name: "python-queue", needs: []string{"python3"}, landlockOnly: "no /dev/shm of its own (POSIX semaphores)",
		script: `python3 -c 'import multiprocessing as mp
def f(q): q.put(42)
if __name__ == "__main__":
    q = mp.Queue(); p = mp.Process(target=f, args=(q,)); p.start(); print(q.get()); p.join()'`},
	{name: "python-pty", needs: []string{"python3"}, landlockOnly: "no terminals of its own (a devpts instance needs a mount namespace)",
		script: `python3 -c 'import os, pty
pid, fd = pty.fork()
if pid == 0:
    os.execvp("sh", ["sh", "-c", "tty >/dev/null && echo from-a-pty"])
out = b""
while True:
    try: d = os.read(fd, 100)
    except OSError: break
    if not d: break
    out += d
os.waitpid(pid, 0); print(out.decode().strip()); assert b"from-a-pty" in out'`},
	{name: "python-pwd", needs: []string{"python3"},
		script: `python3 -c 'import os, pwd, grp; print(pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name)'`},
	{name: "python-venv-unittest", needs: []string{"python3"},
		script: `python3 -m venv --without-pip v && printf 'import unittest\nclass T(unittest.TestCase):\n    def test(self): self.assertEqual(1 + 1, 2)\n' > test_x.py && v/bin/python -m unittest -q test_x`},
	{name: "whoami", needs: []string{"whoami", "id"}, script: `whoami && id -un && id -gn`},
	{name: "ssh-keygen", needs: []string{"ssh-keygen"},
		script: `ssh-keygen -q -t ed25519 -N '' -C test -f ./key && ssh-keygen -l -f ./key.pub`},
	{name: "gpg", needs: []string{"gpg", "gpg-agent"},
		script: `mkdir -m 700 g && gpg --homedir g --batch --passphrase '' --quick-gen-key test@example.com ed25519 sign 2>&1 &&
echo hi | gpg --homedir g --batch --clearsign > signed.txt && gpg --homedir g --batch --verify signed.txt && gpgconf --homedir g --kill gpg-agent`},
	{name: "tmux", needs: []string{"tmux"}, landlockOnly: "/tmp is the host's and not writable, where tmux keeps its socket (TMUX_TMPDIR=$TMPDIR works)",
		script: `tmux new-session -d -s t 'echo hello-from-tmux; sleep 30' && sleep 0.5 &&
for i in $(seq 50); do tmux capture-pane -p -t t | grep -q hello-from-tmux && break; sleep 0.1; done &&
tmux capture-pane -p -t t | grep hello-from-tmux && tmux kill-server`},
	{name: "screen", needs: []string{"screen"}, userNS: "Debian's screen chowns its terminal to the tty group (gid 5), which a user namespace cannot map", landlockOnly: "/run/screen is the host's and not writable",
		script: `screen -dmS s sleep 30 && for i in $(seq 50); do screen -ls | grep -q '\.s' && break; sleep 0.1; done && screen -ls | grep -q '\.s' && screen -S s -X quit`},
	{name: "node-unix-socket", needs: []string{"node"},
		script: `node -e 'const net = require("net");
const s = net.createServer(c => c.end("pong")).listen("n.sock", () =>
  net.connect("n.sock").on("data", d => { console.log(String(d)); s.close(); }));'`},
	{name: "node-npm-test", needs: []string{"node", "npm"},
		script: `printf '{"name":"t","version":"1.0.0","scripts":{"test":"node t.js"}}' > package.json &&
echo 'require("assert").strictEqual(1 + 1, 2); console.log("pass")' > t.js && npm test --silent`},
	{name: "java", needs: []string{"javac", "java"},
		script: `printf 'public class Hello { public static void main(String[] a) { System.out.println("hello " + System.getProperty("user.name")); } }' > Hello.java && javac Hello.java && java -cp . Hello`},
	// The JVM reads the limits of the cgroups it runs in (the call's own,
	// where it has them: syspaths.CgroupTree) and prints them.
	{name: "java-container-metrics", needs: []string{"java"}, script: `java -XshowSettings:system -version 2>&1 | grep -E 'Metrics|Provider|Memory Limit|No metrics'`},
	{name: "fc-match", needs: []string{"fc-match"}, script: `fc-match sans`},
	{name: "script-pty", needs: []string{"script"}, landlockOnly: "no terminals of its own", script: `script -qec 'tty && echo in-a-pty' /dev/null`},
	{name: "expect", needs: []string{"expect"},
		script: `expect -c 'spawn sh -c "read -p {name? } n; echo hello \$n"; expect "name?"; send "bob\r"; expect "hello bob"'`},
	{name: "strace", needs: []string{"strace"},
		script: `strace -f -o trace.txt sh -c 'echo traced; ls >/dev/null' && grep -c execve trace.txt`},
	{name: "gdb", needs: []string{"gdb", "gcc"},
		script: `printf 'int f(int x) { return x * 2; }\nint main(void) { return f(21) - 42; }\n' > p.c && gcc -g -o p p.c &&
gdb -batch -ex 'break f' -ex run -ex bt -ex continue ./p 2>&1 | grep -q 'f (x=21)'`},
	{name: "getent-hosts", needs: []string{"getent"}, script: `getent hosts localhost`},
	{name: "git", needs: []string{"git"},
		script: `git init -q r && cd r && echo a > a && git add a && git -c user.name=t -c user.email=t@example.com commit -qm first && git log --oneline | grep -q first`},
	{name: "gcc-make", needs: []string{"gcc", "make"},
		script: `printf '#include <stdio.h>\nint main(void) { puts("built"); return 0; }\n' > m.c && printf 'm: m.c\n\tgcc -O2 -o m m.c\n' > Makefile && make -s && ./m`},
	// Module work, not a build: a build with an empty cache compiles the
	// runtime (17-46 s here), past exec_command's time limit on a busy machine.
	{name: "go-mod", needs: []string{"go"},
		script: `export PATH=$GODIR:$PATH GOTOOLCHAIN=local GOFLAGS=-mod=mod && go mod init example.com/x 2>/dev/null &&
printf 'package main\n\nfunc main() { println("go") }\n' > main.go && test -z "$(gofmt -l .)" && go mod tidy && go list -f '{{.Name}}' . | grep -q main`},
	{name: "sqlite3", needs: []string{"sqlite3"},
		script: `sqlite3 db.sqlite 'create table t(x); insert into t values (41); select x + 1 from t;' | grep -q 42`},
	{name: "postgresql", needs: []string{"/usr/lib/postgresql/*/bin/initdb", "/usr/lib/postgresql/*/bin/pg_ctl", "psql"}, notRoot: "initdb refuses to run as root",
		script: `export PATH=$PATH:$(echo /usr/lib/postgresql/*/bin | tr ' ' :) && initdb -D pg -A trust -U postgres >/dev/null && pg_ctl -D pg -o "-k $PWD -c listen_addresses=" -l pg.log -w start >/dev/null &&
psql -h "$PWD" -U postgres -tAc 'select 40 + 2' | grep -q 42; r=$?; pg_ctl -D pg -m fast -w stop >/dev/null; exit $r`},
	{name: "redis", needs: []string{"redis-server", "redis-cli"},
		script: `redis-server --port 0 --unixsocket "$PWD/r.sock" --daemonize yes --dir "$PWD" --save '' >/dev/null &&
for i in $(seq 50); do [ -S r.sock ] && break; sleep 0.1; done && redis-cli -s "$PWD/r.sock" set k v >/dev/null && redis-cli -s "$PWD/r.sock" get k | grep -q v; r=$?; redis-cli -s "$PWD/r.sock" shutdown nosave >/dev/null 2>&1; exit $r`},
	{name: "chromium", needs: []string{"chromium"},
		script: `chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --disable-background-networking --disable-component-update --disable-sync \
--user-data-dir="$PWD/profile" --window-size=320,200 --screenshot="$PWD/shot.png" 'data:text/html,<h1>hi</h1>' >chromium.log 2>&1; test -s shot.png || { tail -20 chromium.log; exit 1; }`},
	{name: "perl", needs: []string{"perl"}, script: `perl -MPOSIX -e 'print strftime("%Y", localtime) > 2000 ? "ok\n" : "bad\n"' | grep -q ok`},
	{name: "ruby", needs: []string{"ruby"}, script: `ruby -e 'require "etc"; puts Etc.getlogin.to_s + " " + [1, 2, 3].sum.to_s'`},
	{name: "tar-xz-zip", needs: []string{"tar", "xz", "zip", "unzip"},
		script: `seq 1000 > f && tar cJf a.tar.xz f && tar tJf a.tar.xz | grep -q f && zip -q a.zip f && unzip -l a.zip | grep -q f`},
	{name: "openssl", needs: []string{"openssl"},
		script: `openssl req -x509 -newkey rsa:2048 -nodes -keyout k.pem -out c.pem -subj /CN=autobox -days 1 2>/dev/null && openssl x509 -in c.pem -noout -subject`},
	{name: "valgrind", needs: []string{"valgrind"}, script: `valgrind -q --error-exitcode=3 /bin/true`},
	{name: "vim", needs: []string{"vim"}, script: `vim -Nu NONE -es -c 'normal! ihello' -c wq f.txt && grep -q hello f.txt`},
	{name: "file", needs: []string{"file"}, script: `file /bin/sh | grep -q ELF\\\|link`},
	{name: "ps-top", needs: []string{"ps", "top"}, script: `ps aux | grep -q 'ps aux' && top -bn1 | head -3 | grep -q Tasks`},
	{name: "timezone", needs: []string{"date"}, script: `TZ=Asia/Tokyo date +%Z | grep -q JST`},
	{name: "fifo-xargs", needs: []string{"mkfifo", "xargs"},
		script: `mkfifo p && (echo through-fifo > p &) && cat p && seq 20 | xargs -P4 -n1 true`},
	{name: "ip-addr", needs: []string{"ip"}, landlockOnly: "no network namespace of its own", script: `ip -br addr | grep -q '^lo'`},
	{name: "local-http", needs: []string{"python3", "curl"}, landlockOnly: "no loopback of its own (the host's network is off)",
		script: `python3 -u -m http.server 0 --bind 127.0.0.1 >http.log 2>&1 & pid=$!;
for i in $(seq 100); do port=$(sed -n 's/.* port \([0-9]*\).*/\1/p' http.log); [ -n "$port" ] && break; sleep 0.1; done;
curl -sf "http://127.0.0.1:$port/" >/dev/null; r=$?; kill $pid; exit $r`},
}
