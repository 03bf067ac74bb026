// Golden diagnostic runner: runs a case's RUN line with the ptxgate CLI and compares the full output,
// rewrites expectations in bless mode (refused under CI), and checks that every diagnostic code has a case.
//
//   golden_runner --cli PATH --case STEM [--bless]   one case (STEM = case path without extension)
//   golden_runner --cli PATH --all DIR [--bless]     every case under DIR
//   golden_runner --coverage DIR [--root SOURCE_DIR]  code coverage of DIR's .expected files; with --root,
//                                                     the codes' rows in docs/diagnostics.md and the
//                                                     test files uncovered_codes.txt cites
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ptxgate/diagnostics/diagnostic.hpp"

namespace fs = std::filesystem;

namespace {

/// One golden case: its command line, its input (if any) and where its expectation lives.
struct Case {
  fs::path dir;
  std::string name;                 ///< file stem, e.g. "fail_undefined_name"
  std::optional<fs::path> input;    ///< the case file that %s names
  std::string run;                  ///< the RUN line after "RUN:"
  std::vector<std::string> env;     ///< NAME=VALUE from ENV: lines
  fs::path expected() const { return dir / (name + ".expected"); }
};

struct Output {
  std::string text;  ///< stdout, then stderr, then "exit: N"
  int status = 0;    ///< exit status, or 128 + signal
};

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

/// Reads RUN: and ENV: lines from a header: the leading comment lines of a case file
/// (`//` or `#`), or every line of a sidecar .run file.
bool parse_header(const std::string& text, bool whole_file, Case& c, std::string& error) {
  for (const std::string& raw : split_lines(text)) {
    std::string line = trim(raw);
    if (line.starts_with("//")) {
      line = trim(line.substr(2));
    } else if (line.starts_with("#")) {
      line = trim(line.substr(1));
    } else if (!whole_file && !line.empty()) {
      break;
    }
    if (line.starts_with("RUN:")) {
      if (!c.run.empty()) {
        error = "more than one RUN line";
        return false;
      }
      c.run = trim(line.substr(4));
    } else if (line.starts_with("ENV:")) {
      std::string assignment = trim(line.substr(4));
      if (assignment.find('=') == std::string::npos) {
        error = "ENV line is not NAME=VALUE: " + assignment;
        return false;
      }
      c.env.push_back(assignment);
    }
  }
  if (c.run.empty()) {
    error = "no RUN line (put '// RUN: ptxgate ... %s' at the top, or RUN: in a sidecar .run file)";
    return false;
  }
  return true;
}

std::optional<Case> load_case(const fs::path& stem, std::string& error) {
  Case c;
  c.dir = stem.parent_path().empty() ? fs::path(".") : stem.parent_path();
  c.name = stem.filename().string();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(c.dir, ec)) {
    const fs::path& p = entry.path();
    if (p.stem().string() != c.name || !entry.is_regular_file()) continue;
    std::string ext = p.extension().string();
    if (ext == ".expected" || ext == ".run") continue;
    if (c.input) {
      error = "two case files share the name " + c.name + ": " + c.input->filename().string() + " and " +
              p.filename().string();
      return std::nullopt;
    }
    c.input = p;
  }
  fs::path sidecar = c.dir / (c.name + ".run");
  bool ok = false;
  if (fs::exists(sidecar)) {
    auto text = read_file(sidecar);
    ok = text && parse_header(*text, true, c, error);
  } else if (c.input) {
    auto text = read_file(*c.input);
    ok = text && parse_header(*text, false, c, error);
  } else {
    error = "no case file and no .run file for " + c.name;
  }
  if (!ok) return std::nullopt;
  return c;
}

/// Splits a command line at blanks; single and double quotes group words.
std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (char ch : line) {
    if (quote) {
      if (ch == quote) quote = 0;
      else word.push_back(ch);
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (ch == ' ' || ch == '\t') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word.push_back(ch);
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  if (from.empty()) return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

/// Runs argv in `cwd` with stdin from /dev/null; captures stdout and stderr separately.
std::optional<Output> run_command(const std::vector<std::string>& argv, const fs::path& cwd,
                                  const std::vector<std::string>& env, std::string& error) {
  char out_name[] = "/tmp/golden_out_XXXXXX";
  char err_name[] = "/tmp/golden_err_XXXXXX";
  int out_fd = mkstemp(out_name);
  int err_fd = mkstemp(err_name);
  if (out_fd < 0 || err_fd < 0) {
    error = std::string("cannot create temporary files: ") + std::strerror(errno);
    return std::nullopt;
  }
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    if (chdir(cwd.c_str()) != 0) _exit(126);
    for (const auto& assignment : env) putenv(const_cast<char*>(assignment.c_str()));
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    std::fprintf(stderr, "golden_runner: cannot execute %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
  }
  close(out_fd);
  close(err_fd);
  Output result;
  if (pid < 0) {
    error = std::string("fork failed: ") + std::strerror(errno);
    unlink(out_name);
    unlink(err_name);
    return std::nullopt;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string out = read_file(out_name).value_or("");
  std::string err = read_file(err_name).value_or("");
  unlink(out_name);
  unlink(err_name);
  std::string exit_line;
  if (WIFSIGNALED(status)) {
    result.status = 128 + WTERMSIG(status);
    exit_line = "exit: signal " + std::to_string(WTERMSIG(status));
  } else {
    result.status = WEXITSTATUS(status);
    exit_line = "exit: " + std::to_string(result.status);
  }
  result.text = out + err + exit_line + "\n";
  return result;
}

/// A line diff (longest common subsequence) in unified style, with a few lines of context.
std::string line_diff(const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = split_lines(expected), b = split_lines(actual);
  if (a.size() * b.size() > 4'000'000) return "--- expected\n" + expected + "+++ actual\n" + actual;
  std::vector<std::vector<uint32_t>> lcs(a.size() + 1, std::vector<uint32_t>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;)
    for (size_t j = b.size(); j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  std::vector<std::string> rows;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j]) {
      rows.push_back(" " + a[i]);
      ++i, ++j;
    } else if (j < b.size() && (i == a.size() || lcs[i][j + 1] >= lcs[i + 1][j])) {
      rows.push_back("+" + b[j++]);
    } else {
      rows.push_back("-" + a[i++]);
    }
  }
  std::string out = "--- expected\n+++ actual\n";
  constexpr size_t kContext = 3;
  for (size_t r = 0; r < rows.size(); ++r) {
    bool near_change = false;
    for (size_t k = r >= kContext ? r - kContext : 0; k < std::min(rows.size(), r + kContext + 1); ++k)
      near_change = near_change || rows[k][0] != ' ';
    if (near_change) out += rows[r] + "\n";
    else if (r > 0 && rows[r - 1][0] == ' ' && r + 1 < rows.size() && out.back() == '\n' &&
             !out.ends_with("...\n"))
      out += "...\n";
  }
  return out;
}

bool ci_is_set() {
  const char* ci = std::getenv("CI");
  return ci && *ci;
}

/// Runs one case; returns 0 when it passes (or was blessed), 1 otherwise.
int run_case(const fs::path& cli, const fs::path& stem, bool bless) {
  std::string error;
  std::optional<Case> c = load_case(stem, error);
  if (!c) {
    std::fprintf(stderr, "%s: %s\n", stem.string().c_str(), error.c_str());
    return 1;
  }
  std::vector<std::string> argv = split_words(c->run);
  if (argv.empty() || argv[0] != "ptxgate") {
    std::fprintf(stderr, "%s: the RUN line must start with 'ptxgate': %s\n", c->name.c_str(), c->run.c_str());
    return 1;
  }
  argv[0] = cli.string();
  fs::path temp_dir;
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i].find("%s") != std::string::npos) {
      if (!c->input) {
        std::fprintf(stderr, "%s: the RUN line uses %%s but the case has no input file\n", c->name.c_str());
        return 1;
      }
      replace_all(argv[i], "%s", c->input->filename().string());
    }
    if (argv[i].find("%t") != std::string::npos) {
      if (temp_dir.empty()) {
        char pattern[] = "/tmp/golden_case_XXXXXX";
        if (!mkdtemp(pattern)) {
          std::fprintf(stderr, "%s: cannot create a temporary directory\n", c->name.c_str());
          return 1;
        }
        temp_dir = pattern;
      }
      replace_all(argv[i], "%t", temp_dir.string());
    }
  }
  std::optional<Output> output = run_command(argv, c->dir, c->env, error);
  if (!temp_dir.empty()) {
    std::error_code ec;
    fs::remove_all(temp_dir, ec);
  }
  if (!output) {
    std::fprintf(stderr, "%s: %s\n", c->name.c_str(), error.c_str());
    return 1;
  }
  // Normalise paths: absolute case directory and temporary directory vanish, the CLI is "ptxgate".
  std::string actual = output->text;
  std::string dir = fs::absolute(c->dir).lexically_normal().string();
  if (!dir.ends_with('/')) dir += '/';
  replace_all(actual, dir, "");
  if (!temp_dir.empty()) replace_all(actual, temp_dir.string(), "%t");
  replace_all(actual, cli.string(), "ptxgate");

  int result = 0;
  const bool must_fail = c->name.starts_with("fail_");
  if (must_fail && output->status == 0) {
    std::fprintf(stderr, "%s: a fail_ case must exit non-zero, but it exited 0\n", c->name.c_str());
    result = 1;
  } else if (!must_fail && output->status != 0) {
    std::fprintf(stderr, "%s: a case not named fail_* must exit 0, but it exited %d\n", c->name.c_str(),
                 output->status);
    result = 1;
  }
  if (bless) {
    std::ofstream out(c->expected(), std::ios::binary);
    out << actual;
    if (!out) {
      std::fprintf(stderr, "%s: cannot write %s\n", c->name.c_str(), c->expected().string().c_str());
      return 1;
    }
    std::printf("blessed %s\n", c->expected().filename().string().c_str());
    return result;
  }
  std::optional<std::string> expected = read_file(c->expected());
  if (!expected) {
    std::fprintf(stderr, "%s: missing %s; create it with --bless\n", c->name.c_str(),
                 c->expected().filename().string().c_str());
    return 1;
  }
  if (*expected != actual) {
    std::fprintf(stderr, "%s: output differs from %s\n%s", c->name.c_str(), c->expected().filename().string().c_str(),
                 line_diff(*expected, actual).c_str());
    std::fprintf(stderr, "run the runner with --bless outside CI to accept the new output\n");
    return 1;
  }
  return result;
}

/// Every case stem under `dir`: the stems of all .pg, .expected and .run files.
std::vector<fs::path> find_cases(const fs::path& dir) {
  std::set<fs::path> stems;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::string ext = entry.path().extension().string();
    if (ext == ".pg" || ext == ".expected" || ext == ".run")
      stems.insert(entry.path().parent_path() / entry.path().stem());
  }
  return {stems.begin(), stems.end()};
}

/// The files a reason of uncovered_codes.txt cites ("tests/unit/x_test.cpp", "x_test.cpp" for a
/// unit test, "tests/cli/terminal.sh", "tests/gpu") that do not exist under `root`.
/// The start of a code's row in docs/diagnostics.md's table.
std::string fmt_row(std::string_view code, std::string_view id) {
  return "| " + std::string(code) + " | `" + std::string(id) + "` |";
}

std::vector<std::string> missing_citations(const std::string& reason, const fs::path& root) {
  std::vector<std::string> missing;
  const std::regex cited(R"((?:tests|fuzz|bench|python)/[A-Za-z0-9_./-]*[A-Za-z0-9_]|[A-Za-z0-9_]+_test\.cpp)");
  for (auto it = std::sregex_iterator(reason.begin(), reason.end(), cited); it != std::sregex_iterator(); ++it) {
    const std::string path = (*it)[0].str();
    const bool bare = path.find('/') == std::string::npos;  // a unit test named alone
    if (!fs::exists(bare ? root / "tests" / "unit" / path : root / path)) missing.push_back(path);
  }
  return missing;
}

/// Every code of the table must appear in some .expected file or be listed, with a reason,
/// in uncovered_codes.txt; a listed code that is covered makes the list stale, and a reason
/// that cites a test file that does not exist is wrong. With `docs`, every code must also
/// have its row in the diagnostics reference (docs/diagnostics.md: `| PG1234 | `id` |`).
int check_coverage(const fs::path& dir, const std::optional<fs::path>& root) {
  std::set<std::string> covered;
  const std::regex code_pattern(R"((?:\[|")(PG\d{4})(?:\]|"))");
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".expected") continue;
    ++files;
    std::string text = read_file(entry.path()).value_or("");
    for (auto it = std::sregex_iterator(text.begin(), text.end(), code_pattern); it != std::sregex_iterator(); ++it)
      covered.insert((*it)[1].str());
  }
  int failures = 0;
  std::map<std::string, std::string> listed;
  const fs::path list_path = dir / "uncovered_codes.txt";
  auto list_text = read_file(list_path);
  if (!list_text) {
    std::fprintf(stderr, "missing %s\n", list_path.string().c_str());
    return 1;
  }
  int line_number = 0;
  for (const std::string& raw : split_lines(*list_text)) {
    ++line_number;
    std::string line = trim(raw);
    if (line.empty() || line.starts_with("#")) continue;
    std::string code = line.substr(0, line.find_first_of(" \t"));
    std::string reason = trim(line.substr(code.size()));
    if (!ptxgate::diag::code_from_name(code)) {
      std::fprintf(stderr, "uncovered_codes.txt:%d: '%s' is not a diagnostic code\n", line_number, code.c_str());
      ++failures;
    } else if (reason.empty()) {
      std::fprintf(stderr, "uncovered_codes.txt:%d: %s has no reason\n", line_number, code.c_str());
      ++failures;
    } else if (!listed.emplace(code, reason).second) {
      std::fprintf(stderr, "uncovered_codes.txt:%d: %s is listed twice\n", line_number, code.c_str());
      ++failures;
    } else if (root) {
      for (const std::string& path : missing_citations(reason, *root)) {
        std::fprintf(stderr, "uncovered_codes.txt:%d: %s cites '%s', which does not exist\n", line_number,
                     code.c_str(), path.c_str());
        ++failures;
      }
    }
  }
  if (root) {
    const fs::path docs = *root / "docs" / "diagnostics.md";
    auto text = read_file(docs);
    if (!text) {
      std::fprintf(stderr, "missing %s\n", docs.string().c_str());
      ++failures;
    } else {
      for (const auto& info : ptxgate::diag::all_codes()) {
        const std::string row = fmt_row(info.name, info.id);
        if (text->find(row) == std::string::npos) {
          std::fprintf(stderr, "%s (%s) has no row '%s' in docs/diagnostics.md\n", std::string(info.name).c_str(),
                       std::string(info.id).c_str(), row.c_str());
          ++failures;
        }
      }
    }
  }
  size_t uncovered = 0;
  for (const auto& info : ptxgate::diag::all_codes()) {
    std::string code(info.name);
    bool is_covered = covered.contains(code), is_listed = listed.contains(code);
    if (!is_covered && !is_listed) {
      std::fprintf(stderr, "%s (%s) has no golden case: add one, or list it in uncovered_codes.txt with a reason\n",
                   code.c_str(), std::string(info.id).c_str());
      ++failures;
    } else if (is_covered && is_listed) {
      std::fprintf(stderr, "%s is covered by a golden case but still listed in uncovered_codes.txt: remove the line\n",
                   code.c_str());
      ++failures;
    }
    if (!is_covered) ++uncovered;
  }
  for (const fs::path& stem : find_cases(dir))
    if (!fs::exists(fs::path(stem.string() + ".expected"))) {
      std::fprintf(stderr, "%s has no .expected file\n", stem.string().c_str());
      ++failures;
    }
  std::printf("%zu expectation files, %zu codes, %zu covered, %zu listed as uncovered\n", files,
              ptxgate::diag::all_codes().size(), ptxgate::diag::all_codes().size() - uncovered, listed.size());
  return failures == 0 ? 0 : 1;
}

int usage() {
  std::fprintf(stderr,
               "usage: golden_runner --cli PATH --case STEM [--bless]\n"
               "       golden_runner --cli PATH --all DIR [--bless]\n"
               "       golden_runner --coverage DIR [--root SOURCE_DIR]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<fs::path> cli, one_case, all_dir, coverage_dir, root;
  bool bless = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::optional<fs::path> {
      if (i + 1 >= argc) return std::nullopt;
      return fs::path(argv[++i]);
    };
    if (arg == "--cli") cli = value();
    else if (arg == "--case") one_case = value();
    else if (arg == "--all") all_dir = value();
    else if (arg == "--coverage") coverage_dir = value();
    else if (arg == "--root") root = value();
    else if (arg == "--bless") bless = true;
    else return usage();
  }
  if (coverage_dir) return check_coverage(*coverage_dir, root);
  if (!cli || (!one_case && !all_dir)) return usage();
  if (bless && ci_is_set()) {
    std::fprintf(stderr,
                 "golden_runner: refusing to bless: the CI environment variable is set. Expectations are updated by "
                 "a person, outside CI; unset CI to bless locally.\n");
    return 2;
  }
  fs::path cli_path = fs::absolute(*cli);
  if (one_case) return run_case(cli_path, fs::absolute(*one_case), bless);
  int failed = 0;
  std::vector<fs::path> cases = find_cases(fs::absolute(*all_dir));
  for (const fs::path& stem : cases) failed += run_case(cli_path, stem, bless);
  std::printf("%zu cases, %d failed\n", cases.size(), failed);
  return failed == 0 ? 0 : 1;
}
