#pragma once
/// \file progress_bar.hpp
/// A terminal progress bar for the CLI (stderr, redrawn at most 10 times a second; a plain line
/// every ~5 s when stderr is not a terminal), optionally with a free-text note after the counts
/// (training: the loss and examples/s).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <string>
#include <unistd.h>

#include "plugin/progress.hpp"

namespace plumb::cli {

class ProgressBar {
public:
    ProgressBar(std::string label, std::string unit, bool enabled = true)
        : m_label(std::move(label)), m_unit(std::move(unit)), m_enabled(enabled),
          m_tty(::isatty(2) != 0), m_start(std::chrono::steady_clock::now()) {}
    /// Draws the final line, unless an error is unwinding the command: then a summary such as
    /// "0 queries" before the error message would mislead, and only a started line is ended.
    ~ProgressBar() {
        if (std::uncaught_exceptions() > m_uncaught) {
            std::lock_guard lock(m_mutex);
            if (m_enabled && !m_finished && m_tty && m_drawn) std::fputc('\n', stderr);
            m_finished = true;
            return;
        }
        finish();
    }

    /// A callback to hand to library functions.
    ProgressCallback callback() {
        return [this](std::uint64_t done, std::uint64_t total) { update(done, total); };
    }

    void update(std::uint64_t done, std::uint64_t total) {
        if (!m_enabled) return;
        std::lock_guard lock(m_mutex);
        advance(done, total);
    }

    /// As update(done, total), with a free-text `note` drawn after the counts (e.g. "loss
    /// 0.1234, 52.1 examples/s"); it stays on the line until the next note replaces it.
    void update(std::uint64_t done, std::uint64_t total, std::string note) {
        if (!m_enabled) return;
        std::lock_guard lock(m_mutex);
        m_note = std::move(note);
        advance(done, total);
    }

    void finish() {
        if (!m_enabled || m_finished) return;
        std::lock_guard lock(m_mutex);
        m_finished = true;
        draw(std::chrono::steady_clock::now(), true);
    }

    /// A rate with about three significant digits: "1639", "52.1", "3.45", "0.43", "0.0041".
    /// Slow work (a BERT training step every few seconds) must not read "0 steps/s".
    static std::string format_rate(double rate) {
        char buf[32];
        if (!(rate > 0)) return "0";
        if (rate >= 100) std::snprintf(buf, sizeof buf, "%.0f", rate);
        else if (rate >= 1) std::snprintf(buf, sizeof buf, "%.3g", rate);
        else std::snprintf(buf, sizeof buf, "%.2g", rate);
        return buf;
    }

private:
    void advance(std::uint64_t done, std::uint64_t total) {
        m_done = done;
        m_total = total;
        auto now = std::chrono::steady_clock::now();
        auto interval = m_tty ? std::chrono::milliseconds(100) : std::chrono::milliseconds(5000);
        if (now - m_last < interval) return;
        m_last = now;
        draw(now, false);
    }

    void draw(std::chrono::steady_clock::time_point now, bool final) {
        double secs = std::chrono::duration<double>(now - m_start).count();
        double rate = secs > 0 ? static_cast<double>(m_done) / secs : 0.0;
        std::string line = m_label + ": ";
        if (m_total > 0) {
            double frac = static_cast<double>(m_done) / static_cast<double>(m_total);
            if (frac > 1) frac = 1;
            int width = 30, fill = static_cast<int>(frac * width);
            line += "[" + std::string(fill, '#') + std::string(width - fill, '.') + "] ";
            char buf[160];
            double eta = rate > 0 ? static_cast<double>(m_total - std::min(m_done, m_total)) / rate
                                  : 0.0;
            std::snprintf(buf, sizeof buf, "%llu/%llu %s (%s %s/s, %.1fs, eta %.0fs)",
                          static_cast<unsigned long long>(m_done),
                          static_cast<unsigned long long>(m_total), m_unit.c_str(),
                          format_rate(rate).c_str(),
                          m_unit.c_str(), secs, eta);
            line += buf;
        } else {
            char buf[128];
            std::snprintf(buf, sizeof buf, "%llu %s (%s %s/s, %.1fs)",
                          static_cast<unsigned long long>(m_done), m_unit.c_str(),
                          format_rate(rate).c_str(),
                          m_unit.c_str(), secs);
            line += buf;
        }
        if (!m_note.empty()) line += ", " + m_note;
        m_drawn = true;
        if (m_tty) {
            std::fprintf(stderr, "\r%s\x1b[K%s", line.c_str(), final ? "\n" : "");
        } else {
            std::fprintf(stderr, "%s\n", line.c_str());
        }
        std::fflush(stderr);
    }

    std::string m_label, m_unit, m_note;
    bool m_enabled, m_tty, m_finished = false, m_drawn = false;
    int m_uncaught = std::uncaught_exceptions();
    std::mutex m_mutex;
    std::uint64_t m_done = 0, m_total = 0;
    std::chrono::steady_clock::time_point m_start, m_last{};
};

}  // namespace plumb::cli
