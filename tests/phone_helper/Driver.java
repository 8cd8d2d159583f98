import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs the phone helper's real bytecode (the committed dex, turned into a jar by enjarify) against the stub
 * android.* classes, once per case file of tests/fixtures/phone-helper/, in a child JVM: writes the case's
 * request lines to its stdin, closes it, and checks that the helper exits by itself, that its stdout is exactly
 * the expected replies and its stderr exactly the stub's records.
 *
 * Case file lines:  "# ..." comment; "! key=value ..." stub settings (-Dstub.key=value);
 * "> LINE" a request (LINE + "\n"); ">hex 41 0a" raw bytes; ">long ID N" the request "ID ping " + N x's;
 * "< LINE" an expected reply; "= LINE" an expected stub record (only this JVM run has records).
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
        ByteArrayOutputStream input = new ByteArrayOutputStream();
        List<String> replies = new ArrayList<>();
        List<String> records = new ArrayList<>();
        for (String line : Files.readAllLines(file.toPath(), StandardCharsets.UTF_8)) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            if (line.startsWith("! ")) {
                for (String kv : line.substring(2).trim().split(" +")) cmd.add("-Dstub." + kv);
            } else if (line.startsWith("> ")) {
                input.write((line.substring(2) + "\n").getBytes(StandardCharsets.UTF_8));
            } else if (line.startsWith(">hex ")) {
                for (String h : line.substring(5).trim().split(" +")) input.write(Integer.parseInt(h, 16));
            } else if (line.startsWith(">long ")) {
                String[] p = line.substring(6).trim().split(" ");
                input.write((p[0] + " ping " + "x".repeat(Integer.parseInt(p[1])) + "\n")
                        .getBytes(StandardCharsets.US_ASCII));
            } else if (line.startsWith("< ")) {
                replies.add(line.substring(2));
            } else if (line.startsWith("= ")) {
                records.add(line.substring(2));
            } else {
                throw new IllegalArgumentException(file + ": cannot read line: " + line);
            }
        }
        cmd.add("-cp");
        cmd.add(jar + File.pathSeparator + stubs);
        cmd.add("xagent.Helper");
        Process p = new ProcessBuilder(cmd).start();
        Collector out = new Collector(p.getInputStream());
        Collector err = new Collector(p.getErrorStream());
        out.start();
        err.start();
        try (OutputStream in = p.getOutputStream()) {
            in.write(input.toByteArray());
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
        if (p.exitValue() != 0) problems.append("  exit status ").append(p.exitValue()).append('\n');
        compare("reply (stdout)", replies, out.lines(), problems);
        compare("record (stderr)", records, err.lines(), problems);
        return problems.length() == 0 ? null : problems.toString();
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

        @Override
        public void run() {
            try {
                in.transferTo(buf);
            } catch (IOException e) {
                // the process ended; keep what was read
            }
        }

        List<String> lines() {
            String s = buf.toString(StandardCharsets.UTF_8);
            List<String> l = new ArrayList<>(Arrays.asList(s.split("\n", -1)));
            // every line ends in "\n": the piece after the last one must be empty, else it is shown as a line
            if (!l.isEmpty() && l.get(l.size() - 1).isEmpty()) l.remove(l.size() - 1);
            return l;
        }
    }
}
