import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.xml.parsers.DocumentBuilderFactory;
import org.xml.sax.InputSource;

/**
 * Runs the phone helper's real bytecode (the committed dex, turned into a jar by enjarify) against the stub
 * android.* classes, once per case file of tests/fixtures/phone-helper/, in a child JVM: writes the case's
 * request lines to its stdin, closes it, and checks that the helper exits by itself, that its stdout is exactly
 * the expected replies and its stderr exactly the stub's records.
 *
 * Case file lines:  "# ..." comment; "! key=value ..." stub settings (-Dstub.key=value);
 * "> LINE" a request (LINE + "\n"); ">hex 41 0a" raw bytes; ">long ID N" the request "ID ping " + N x's;
 * ">pause MS" wait until the helper has written every reply expected so far, then MS ms more, before sending
 * the rest (for the UiAutomation's release after 3 s without a tree/idle);
 * "< LINE" an expected reply; "<xml ID XML" the reply "ID ok xml " + base64 of XML's UTF-8 bytes (compared as
 * the decoded XML); "<xmlsum ID windows=W nodes=N truncated=T bytes=B line=L" a tree reply with W windows, N nodes, B bytes
 * of XML, L bytes of reply line;
 * "= LINE" an expected stub record (only this JVM run has records);
 * "!env KEY=VALUE" the helper's environment (app_process's, e.g. SYSTEMSERVERCLASSPATH);
 * "!exit N" the exit status expected (0 when absent: a native abort is 134).
 * Every tree reply must also parse as XML 1.0 (the JDK's parser): escaping that breaks it fails the case.
 *
 * Usage: java Driver HELPER_JAR STUB_CLASSES CASE_DIR
 */
public final class Driver {
    public static void main(String[] args) throws Exception {
        String jar = args[0];
        String stubs = args[1];
        File[] cases = new File(args[2]).listFiles((d, n) -> n.endsWith(".case"));
        if (cases == null || cases.length == 0) throw new IllegalStateException("no .case files in " + args[2]);
        Arrays.sort(cases);
        int failed = 0;
        for (File c : cases) {
            String problem = run(jar, stubs, c);
            if (problem == null) {
                System.out.println("ok   " + c.getName());
            } else {
                failed++;
                System.out.println("FAIL " + c.getName() + "\n" + problem);
            }
        }
        System.out.println(cases.length + " cases, " + failed + " failed");
        System.exit(failed == 0 ? 0 : 1);
    }

    static String run(String jar, String stubs, File file) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(new File(System.getProperty("java.home"), "bin/java").getPath());
        cmd.add("-Xshare:auto");
        // the input in pieces: bytes to send, or a pause (a Long: MS, after the replies counted so far)
        List<Object> pieces = new ArrayList<>();
        ByteArrayOutputStream input = new ByteArrayOutputStream();
        List<Integer> pauseAfter = new ArrayList<>();
        List<String> replies = new ArrayList<>();
        List<String> records = new ArrayList<>();
        java.util.Map<String, String> env = new java.util.HashMap<>();
        int exit = 0;
        // the helper reaches Runtime.loadLibrary0 by reflection, as it can on Android (no module system there)
        // app_process's main thread has the process's 8 MB stack (the RLIMIT_STACK of a shell), not the JVM's 1 MB:
        // a deep tree's recursion must not depend on how much the JIT has compiled yet on a busy machine
        cmd.add("-Xss8m");
        cmd.add("--add-opens");
        cmd.add("java.base/java.lang=ALL-UNNAMED");
        for (String line : Files.readAllLines(file.toPath(), StandardCharsets.UTF_8)) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            if (line.startsWith("!env ")) {
                String[] kv = line.substring(5).trim().split("=", 2);
                env.put(kv[0], kv[1]);
            } else if (line.startsWith("!exit ")) {
                exit = Integer.parseInt(line.substring(6).trim());
            } else if (line.startsWith("! ")) {
                for (String kv : line.substring(2).trim().split(" +")) cmd.add("-Dstub." + kv);
            } else if (line.startsWith("> ")) {
                input.write((line.substring(2) + "\n").getBytes(StandardCharsets.UTF_8));
            } else if (line.startsWith(">hex ")) {
                for (String h : line.substring(5).trim().split(" +")) input.write(Integer.parseInt(h, 16));
            } else if (line.startsWith(">long ")) {
                String[] p = line.substring(6).trim().split(" ");
                input.write((p[0] + " ping " + "x".repeat(Integer.parseInt(p[1])) + "\n")
                        .getBytes(StandardCharsets.US_ASCII));
            } else if (line.startsWith(">pause ")) {
                pieces.add(input.toByteArray());
                input.reset();
                pieces.add(Long.parseLong(line.substring(7).trim()));
                pauseAfter.add(replies.size());
            } else if (line.startsWith("< ") || line.startsWith("<xml ") || line.startsWith("<xmlsum ")) {
                replies.add(line);
            } else if (line.startsWith("= ")) {
                records.add(line.substring(2));
            } else {
                throw new IllegalArgumentException(file + ": cannot read line: " + line);
            }
        }
        pieces.add(input.toByteArray());
        cmd.add("-cp");
        cmd.add(jar + File.pathSeparator + stubs);
        cmd.add("xagent.Helper");
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().remove("SYSTEMSERVERCLASSPATH");
        pb.environment().putAll(env);
        Process p = pb.start();
        Collector out = new Collector(p.getInputStream());
        Collector err = new Collector(p.getErrorStream());
        out.start();
        err.start();
        int pauses = 0;
        try (OutputStream in = p.getOutputStream()) {
            for (Object piece : pieces) {
                if (piece instanceof byte[]) {
                    in.write((byte[]) piece);
                    in.flush();
                    continue;
                }
                int want = pauseAfter.get(pauses++);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (out.count() < want && System.nanoTime() < deadline && p.isAlive()) Thread.sleep(5);
                Thread.sleep((Long) piece);
            }
        } catch (IOException e) {
            // the helper may have exited already; what it printed says why
        }
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            return "  the helper did not exit within 30 s of its stdin closing";
        }
        out.join();
        err.join();
        StringBuilder problems = new StringBuilder();
        if (p.exitValue() != exit) {
            problems.append("  exit status ").append(p.exitValue()).append(", expected ").append(exit).append('\n');
        }
        compareReplies(replies, out.lines(), problems);
        compare("record (stderr)", records, err.lines(), problems);
        return problems.length() == 0 ? null : problems.toString();
    }

    /** The replies, with tree replies decoded: each must parse as XML and match its "<xml" or "<xmlsum" line. */
    static void compareReplies(List<String> want, List<String> got, StringBuilder problems) {
        List<String> w = new ArrayList<>();
        List<String> g = new ArrayList<>();
        for (int i = 0; i < Math.max(want.size(), got.size()); i++) {
            String e = i < want.size() ? want.get(i) : "< (nothing)";
            String r = i < got.size() ? got.get(i) : "(nothing)";
            String[] f = r.split(" ", 4);
            String xml = null;
            if (f.length == 4 && f[1].equals("ok") && f[2].equals("xml")) {
                try {
                    xml = new String(Base64.getDecoder().decode(f[3]), StandardCharsets.UTF_8);
                    DocumentBuilderFactory.newInstance().newDocumentBuilder()
                            .parse(new InputSource(new java.io.StringReader(xml)));
                } catch (Exception x) {
                    problems.append("  reply ").append(i + 1).append(" is not well-formed XML (").append(x)
                            .append("):\n    ").append(xml == null ? r : xml).append('\n');
                    return;
                }
            }
            if (e.startsWith("<xml ")) {
                String[] p = e.split(" ", 3);
                w.add(p[1] + " ok xml " + p[2]);
                g.add(xml == null ? r : f[0] + " ok xml " + xml);
            } else if (e.startsWith("<xmlsum ")) {
                w.add(e.substring(8));
                g.add(xml == null ? r : f[0] + " windows=" + occurrences(xml, "<window ") + " nodes="
                        + occurrences(xml, "<node ") + " truncated=" + xml.contains(" truncated=\"true\"") + " bytes="
                        + xml.getBytes(StandardCharsets.UTF_8).length + " line=" + r.length());
            } else {
                w.add(e.substring(2));
                g.add(r);
            }
        }
        compare("reply (stdout)", w, g, problems);
    }

    static int occurrences(String s, String what) {
        int n = 0;
        for (int i = s.indexOf(what); i >= 0; i = s.indexOf(what, i + 1)) n++;
        return n;
    }

    static void compare(String what, List<String> want, List<String> got, StringBuilder problems) {
        int n = Math.max(want.size(), got.size());
        for (int i = 0; i < n; i++) {
            String w = i < want.size() ? want.get(i) : "(nothing)";
            String g = i < got.size() ? got.get(i) : "(nothing)";
            if (!w.equals(g)) {
                problems.append("  ").append(what).append(" ").append(i + 1).append(":\n    want ").append(w)
                        .append("\n    got  ").append(g).append('\n');
                problems.append("  everything it wrote:\n");
                for (String l : got) problems.append("    | ").append(l).append('\n');
                return;
            }
        }
    }

    static final class Collector extends Thread {
        private final InputStream in;
        private final ByteArrayOutputStream buf = new ByteArrayOutputStream();

        Collector(InputStream in) {
            this.in = in;
        }

        private int newlines;

        @Override
        public void run() {
            byte[] b = new byte[65536];
            try {
                for (int n; (n = in.read(b)) > 0; ) {
                    synchronized (this) {
                        buf.write(b, 0, n);
                        for (int i = 0; i < n; i++) if (b[i] == '\n') newlines++;
                    }
                }
            } catch (IOException e) {
                // the process ended; keep what was read
            }
        }

        /** Lines written so far. */
        synchronized int count() {
            return newlines;
        }

        synchronized List<String> lines() {
            String s = buf.toString(StandardCharsets.UTF_8);
            List<String> l = new ArrayList<>(Arrays.asList(s.split("\n", -1)));
            // every line ends in "\n": the piece after the last one must be empty, else it is shown as a line
            if (!l.isEmpty() && l.get(l.size() - 1).isEmpty()) l.remove(l.size() - 1);
            return l;
        }
    }
}
