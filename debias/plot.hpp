#pragma once
/// \file plot.hpp
/// Small charts for the debias audits, drawn with Cairo and written both as PNG (image surface)
/// and SVG (vector surface). Every file is written atomically (temporary file, then rename).
///
/// Two chart kinds cover the audits: a bar chart / histogram with side-by-side series (answer
/// positions before and after rotation, first relevant ranks), and a line chart with an optional
/// ±sd band per series (ATS vs Δa). Axes have "nice" ticks (1, 2, 5 × 10^k), labels and a legend.
/// Rendering is deterministic for a given chart. Thread-safe (no shared state).

#include <filesystem>
#include <string>
#include <vector>

namespace plumb::debias {

/// One data series. For a bar chart `values[i]` belongs to category i; for a line chart to x[i].
/// `sd`, when non-empty (same size as values), draws a ±sd band around a line (ignored for bars).
struct PlotSeries {
    std::string name;
    std::vector<double> values;
    std::vector<double> sd;
};

struct BarChart {
    std::string title;
    std::string x_label;
    std::string y_label;
    std::vector<std::string> categories;  ///< one label per bar group
    std::vector<PlotSeries> series;       ///< drawn side by side within each group
};

struct LineChart {
    std::string title;
    std::string x_label;
    std::string y_label;
    std::vector<double> x;  ///< shared x values, increasing
    std::vector<PlotSeries> series;
};

/// Pixel size of the PNG; the SVG uses the same size in points.
struct PlotSize {
    int width = 800;
    int height = 480;
};

/// Writes `<prefix>.png` and `<prefix>.svg`. Throws InvalidArgument when a series' size does not
/// match the categories / x values or there is nothing to draw, IoError when a file cannot be
/// written (no partial file is left behind).
void write_bar_chart(const BarChart& chart, const std::filesystem::path& prefix,
                     PlotSize size = {});
void write_line_chart(const LineChart& chart, const std::filesystem::path& prefix,
                      PlotSize size = {});

/// Tick positions covering [lo, hi] with a "nice" step (1, 2 or 5 × 10^k), about `target` ticks.
/// Exposed for tests. Returns at least two ticks; lo == hi is widened.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

}  // namespace plumb::debias
