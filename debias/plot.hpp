#pragma once
/// \file plot.hpp
/// Small charts for the debias audits, drawn with Cairo and written both as PNG (image surface)
/// and SVG (vector surface). Every file is written atomically (temporary file, then rename).
///
/// Three chart kinds cover the audits: a bar chart / histogram with side-by-side series (answer
/// positions before and after rotation, first relevant ranks), a line chart with an optional
/// ±sd band per series (ATS vs Δa), and a scatter chart whose series have their own points
/// (bias against effectiveness of post-filters at several budgets). Axes have "nice" ticks
/// (1, 2, 5 × 10^k), labels and a legend.
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

/// One series of a scatter chart: points (x[i], y[i]), optionally labelled and joined by a line
/// in the given order. Points with a non-finite coordinate are not drawn (and break the line).
struct XYSeries {
    std::string name;
    std::vector<double> x;
    std::vector<double> y;
    std::vector<std::string> labels;  ///< empty, or one short label per point (drawn beside it)
    bool connect = true;              ///< join the points by a line in order
};

/// A scatter chart: each series has its own points; both axes have nice ticks covering the data.
/// Each marker is drawn as its own filled circle (radius 4), one path per point, in series order.
struct ScatterChart {
    std::string title;
    std::string x_label;
    std::string y_label;
    std::vector<XYSeries> series;
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

/// Writes `<prefix>.png` and `<prefix>.svg` of a scatter chart. InvalidArgument when sizes of a
/// series disagree or no point is finite; IoError as above.
void write_scatter_chart(const ScatterChart& chart, const std::filesystem::path& prefix,
                         PlotSize size = {});

/// Tick positions covering [lo, hi] with a "nice" step (1, 2 or 5 × 10^k), about `target` ticks.
/// Exposed for tests. Returns at least two ticks; lo == hi is widened.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

}  // namespace plumb::debias
