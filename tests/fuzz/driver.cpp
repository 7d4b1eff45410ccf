// A small stand-in for libFuzzer's main, linked with every fuzz target in the normal (g++)
// build and run by ctest: replays the seed corpus, then for a few seconds feeds
// deterministically mutated seeds (bit flips, interesting bytes and tokens, inserted and erased
// ranges, truncation, splices of two seeds, deep brackets, huge numbers). No coverage feedback:
// a smoke test of the parsers' error paths on every build; scripts/fuzz runs the real thing.
//
//   fuzz_<name> [-seconds=N] [-seed=N] [-timeout=S] <seed dir or file>...
//
// A crash, an escaping exception (std::terminate), a sanitizer report or an input running
// longer than -timeout seconds writes the input to ./fuzz-crash-<pid> and fails.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" void __sanitizer_set_death_callback(void (*)(void)) __attribute__((weak));

namespace {

const std::string* g_current = nullptr;  // the input being run

void dump_current() {
    if (!g_current) return;
    const std::string* input = g_current;
    g_current = nullptr;  // once (std::terminate, then SIGABRT)
    char name[64];
    std::snprintf(name, sizeof name, "fuzz-crash-%d", static_cast<int>(::getpid()));
    const int fd = ::open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        const char* p = input->data();
        std::size_t left = input->size();
        while (left > 0) {
            const ssize_t n = ::write(fd, p, left);
            if (n <= 0) break;
            p += n;
            left -= static_cast<std::size_t>(n);
        }
        ::close(fd);
    }
    const char msg[] = "fuzz driver: failing input written to ";
    [[maybe_unused]] auto r = ::write(2, msg, sizeof msg - 1);
    r = ::write(2, name, std::strlen(name));
    r = ::write(2, "\n", 1);
}

void on_signal(int sig) {
    if (sig == SIGALRM) {
        const char msg[] = "fuzz driver: timeout (an input ran longer than -timeout)\n";
        [[maybe_unused]] auto r = ::write(2, msg, sizeof msg - 1);
    }
    dump_current();
    std::signal(sig, SIG_DFL);
    if (sig == SIGALRM) std::_Exit(70);
    std::raise(sig);
}

void on_terminate() {
    std::fputs("fuzz driver: uncaught exception", stderr);
    try {
        if (auto e = std::current_exception()) std::rethrow_exception(e);
    } catch (const std::exception& e) {
        std::fprintf(stderr, " (%s)", e.what());
    } catch (...) {
    }
    std::fputc('\n', stderr);
    dump_current();
    std::abort();
}

struct Rng {  // splitmix64: same mutation sequence on every run
    std::uint64_t s;
    std::uint64_t next() {
        std::uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    std::size_t below(std::size_t n) { return n ? static_cast<std::size_t>(next() % n) : 0; }
};

const char kBytes[] = {'\0',   '\r',   '\n',   '\t',   ' ',    '"',    '\\',   '{',
                       '}',    '[',    ']',    ':',    ',',    '<',    '>',    '/',
                       '%',    '*',    '#',    '-',    '.',    '0',    '9',    'e',
                       '\x7f', '\x80', '\xbf', '\xc0', '\xed', '\xef', '\xf4', '\xff'};
const char* const kTokens[] = {"\r\n",
                               "\r",
                               "\xEF\xBB\xBF",
                               "\x1f\x8b",
                               "\xC3\xA9",
                               "\xE2\x80\xA8",
                               "\xF0\x9F\x98\x80",
                               "\xED\xA0\x80",
                               "\xC0\xAF",
                               "\xF4\x90\x80\x80",
                               "\t\t",
                               "  ",
                               "\"\"",
                               "null",
                               "true",
                               "false",
                               "-1",
                               "0",
                               "-0",
                               "4294967296",
                               "18446744073709551616",
                               "9223372036854775807",
                               "-9223372036854775809",
                               "99999999999999999999999999",
                               "1e308",
                               "1e999",
                               "-1e999",
                               "NaN",
                               "nan",
                               "inf",
                               "-inf",
                               "0x10",
                               "1.5",
                               "2147483648",
                               "&amp;",
                               "&#0;",
                               "&#x110000;",
                               "&#99999999999;",
                               "<DOC>",
                               "</DOC>",
                               "<DOCNO>",
                               "</DOCNO>",
                               "<TEXT>",
                               "</TEXT>",
                               "<top>",
                               "</top>",
                               "<num>",
                               "<title>",
                               "<desc>",
                               "<narr>",
                               "<!--",
                               "-->",
                               "<script>",
                               "<![CDATA[",
                               "]]>",
                               "%\n",
                               "*",
                               "\"_id\":",
                               "\"text\":",
                               "\"passages\":",
                               "\"data\":",
                               "\"shape\":",
                               "\"dtype\":",
                               "\"data_offsets\":",
                               "---\n",
                               "- ",
                               ": ",
                               "&a",
                               "*a",
                               "!!binary",
                               "{}",
                               "[]"};

void mutate_once(std::string& s, const std::vector<std::string>& seeds, Rng& rng) {
    switch (rng.below(11)) {
        case 0:  // flip a bit
            if (!s.empty()) s[rng.below(s.size())] ^= static_cast<char>(1u << rng.below(8));
            break;
        case 1:  // set an interesting byte
            if (!s.empty()) s[rng.below(s.size())] = kBytes[rng.below(sizeof kBytes)];
            break;
        case 2:  // insert an interesting byte
            s.insert(s.begin() + static_cast<long>(rng.below(s.size() + 1)),
                     kBytes[rng.below(sizeof kBytes)]);
            break;
        case 3:  // insert a token
            s.insert(rng.below(s.size() + 1),
                     kTokens[rng.below(sizeof kTokens / sizeof kTokens[0])]);
            break;
        case 4: {  // erase a range
            if (s.empty()) break;
            const auto at = rng.below(s.size());
            s.erase(at, 1 + rng.below(std::min<std::size_t>(s.size() - at, 64)));
            break;
        }
        case 5:  // truncate
            s.resize(rng.below(s.size() + 1));
            break;
        case 6: {  // duplicate a range
            if (s.empty()) break;
            const auto at = rng.below(s.size());
            const auto n = 1 + rng.below(std::min<std::size_t>(s.size() - at, 256));
            s.insert(rng.below(s.size() + 1), s.substr(at, n));
            break;
        }
        case 7: {  // splice: a prefix of this input, a suffix of another seed
            const auto& o = seeds[rng.below(seeds.size())];
            s = s.substr(0, rng.below(s.size() + 1)) + o.substr(rng.below(o.size() + 1));
            break;
        }
        case 8: {  // deep nesting
            static const char* open[] = {"[", "{\"a\":", "<b>", "- ", "(", "\"", "<DOC>"};
            static const char* close[] = {"]", "}", "</b>", "", ")", "\"", "</DOC>"};
            const auto k = rng.below(7);
            const auto depth = 1 + rng.below(rng.below(2) ? 64 : 20000);
            std::string o, c;
            for (std::size_t i = 0; i < depth; ++i) o += open[k];
            for (std::size_t i = 0; i < depth; ++i) c += close[k];
            const auto at = rng.below(s.size() + 1);
            s.insert(at, rng.below(2) ? o + c : o);
            break;
        }
        case 9: {  // replace a digit run with a huge or odd number
            static const char* nums[] = {
                "18446744073709551615", "-9223372036854775808", "99999999999", "1e400", "-1", "0",
                "4294967295",           "2147483647",           "65536"};
            const auto at = s.find_first_of("0123456789", rng.below(s.size() + 1));
            if (at == std::string::npos) break;
            auto end = s.find_first_not_of("0123456789", at);
            if (end == std::string::npos) end = s.size();
            s.replace(at, end - at, nums[rng.below(sizeof nums / sizeof nums[0])]);
            break;
        }
        default: {  // copy a line of the input elsewhere (repeated records, ids)
            if (s.empty()) break;
            const auto a = s.rfind('\n', rng.below(s.size()));
            const auto from = a == std::string::npos ? 0 : a + 1;
            auto to = s.find('\n', from);
            if (to == std::string::npos) to = s.size();
            const auto line = s.substr(from, to - from + (to < s.size() ? 1 : 0));
            s.insert(rng.below(s.size() + 1), line);
            break;
        }
    }
    if (s.size() > (1u << 20)) s.resize(1u << 20);
}

bool read_whole(const std::string& path, std::string& out) {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    out.clear();
    char buf[65536];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    std::fclose(f);
    return true;
}

void add_seeds(const std::string& path, std::vector<std::string>& seeds) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        std::fprintf(stderr, "fuzz driver: no such seed file or folder: %s\n", path.c_str());
        std::exit(2);
    }
    if (S_ISDIR(st.st_mode)) {
        std::vector<std::string> names;
        if (DIR* d = ::opendir(path.c_str())) {
            while (const dirent* e = ::readdir(d)) {
                if (e->d_name[0] != '.') names.push_back(path + "/" + e->d_name);
            }
            ::closedir(d);
        }
        std::sort(names.begin(), names.end());
        for (const auto& n : names) add_seeds(n, seeds);
    } else {
        std::string s;
        if (read_whole(path, s)) seeds.push_back(std::move(s));
    }
}

void run_one(const std::string& input, unsigned timeout) {
    g_current = &input;
    if (timeout) ::alarm(timeout);
    LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(input.data()), input.size());
    if (timeout) ::alarm(0);
    g_current = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
    double seconds = 3;
    std::uint64_t seed = 1;
    unsigned timeout = 10;
    std::vector<std::string> seeds;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a.rfind("-seconds=", 0) == 0) {
            seconds = std::atof(a.c_str() + 9);
        } else if (a.rfind("-seed=", 0) == 0) {
            seed = std::strtoull(a.c_str() + 6, nullptr, 10);
        } else if (a.rfind("-timeout=", 0) == 0) {
            timeout = static_cast<unsigned>(std::atoi(a.c_str() + 9));
        } else {
            add_seeds(a, seeds);
        }
    }
    if (const char* env = std::getenv("PLUMB_FUZZ_SECONDS")) seconds = std::atof(env);
    std::set_terminate(on_terminate);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) std::signal(sig, on_signal);
    if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(dump_current);
    if (seeds.empty()) seeds.emplace_back();

    for (const auto& s : seeds) run_one(s, timeout);
    const std::string empty;
    run_one(empty, timeout);

    Rng rng{seed};
    std::uint64_t runs = seeds.size() + 1;
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    std::string input;
    while (std::chrono::steady_clock::now() < end) {
        for (int batch = 0; batch < 16; ++batch) {
            input = seeds[rng.below(seeds.size())];
            const auto n = 1 + rng.below(rng.below(4) ? 4 : 16);
            for (std::size_t m = 0; m < n; ++m) mutate_once(input, seeds, rng);
            run_one(input, timeout);
            ++runs;
        }
    }
    std::printf("fuzz driver: %zu seeds, %llu runs in %.1f s, no finding\n", seeds.size(),
                static_cast<unsigned long long>(runs), seconds);
    return 0;
}
