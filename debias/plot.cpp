#include "debias/plot.hpp"

#include <cairo-svg.h>
#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>

#include "plugin/error.hpp"
#include "plugin/text_io.hpp"

namespace plumb::debias {
namespace {

// A colour-blind-safe palette (Okabe & Ito).
constexpr double kPalette[][3] = {
    {0.000, 0.447, 0.698}, {0.902, 0.624, 0.000}, {0.000, 0.620, 0.451}, {0.800, 0.475, 0.655},
    {0.337, 0.706, 0.914}, {0.835, 0.369, 0.000}, {0.941, 0.894, 0.259}, {0.000, 0.000, 0.000}};
constexpr int kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);

void set_colour(cairo_t* cr, std::size_t i, double alpha = 1.0) {
    const auto& c = kPalette[i % kPaletteSize];
    cairo_set_source_rgba(cr, c[0], c[1], c[2], alpha);
}

std::string format_tick(double v, double step) {
    char buf[64];
    int decimals = 0;
    if (step > 0 && step < 1) decimals = static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    decimals = std::clamp(decimals, 0, 6);
    if (std::fabs(v) < step * 1e-6) v = 0.0;
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

/// Plot area in device units.
struct Frame {
    double left, top, right, bottom;
    double y_lo, y_hi;
    double x_lo, x_hi;
    double map_y(double v) const { return bottom - (v - y_lo) / (y_hi - y_lo) * (bottom - top); }
    double map_x(double v) const { return left + (v - x_lo) / (x_hi - x_lo) * (right - left); }
};

void text_at(cairo_t* cr, const std::string& s, double x, double y, double align_x,
             double align_y) {
    cairo_text_extents_t ext;
    cairo_text_extents(cr, s.c_str(), &ext);
    cairo_move_to(cr, x - ext.width * align_x - ext.x_bearing,
                  y - ext.height * align_y - ext.y_bearing);
    cairo_show_text(cr, s.c_str());
}

void draw_common(cairo_t* cr, const std::string& title, const std::string& x_label,
                 const std::string& y_label, const Frame& f, const std::vector<double>& y_ticks,
                 int width, int height) {
    // Background.
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
    // Grid and y ticks.
    double step = y_ticks.size() > 1 ? y_ticks[1] - y_ticks[0] : 1.0;
    cairo_set_font_size(cr, 12);
    cairo_set_line_width(cr, 1.0);
    for (double t : y_ticks) {
        double y = f.map_y(t);
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, f.left, y);
        cairo_line_to(cr, f.right, y);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_move_to(cr, f.left - 5, y);
        cairo_line_to(cr, f.left, y);
        cairo_stroke(cr);
        text_at(cr, format_tick(t, step), f.left - 8, y, 1.0, 0.5);
    }
    // Axes.
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_line_width(cr, 1.5);
    cairo_move_to(cr, f.left, f.top);
    cairo_line_to(cr, f.left, f.bottom);
    cairo_line_to(cr, f.right, f.bottom);
    cairo_stroke(cr);
    // Title and axis labels.
    cairo_set_font_size(cr, 16);
    text_at(cr, title, width / 2.0, 22, 0.5, 0.5);
    cairo_set_font_size(cr, 13);
    text_at(cr, x_label, (f.left + f.right) / 2.0, height - 14, 0.5, 0.5);
    cairo_save(cr);
    cairo_translate(cr, 16, (f.top + f.bottom) / 2.0);
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, y_label, 0, 0, 0.5, 0.5);
    cairo_restore(cr);
}

template <class Series>
std::vector<std::string> series_names(const std::vector<Series>& series) {
    std::vector<std::string> names;
    for (const auto& s : series) names.push_back(s.name);
    return names;
}

bool has_legend(std::size_t series) { return series >= 2; }

/// A horizontal legend in the strip between the title and the plot area, right-aligned, so that
/// it never hides data.
void draw_legend(cairo_t* cr, const std::vector<std::string>& names, const Frame& f) {
    if (!has_legend(names.size())) return;
    cairo_set_font_size(cr, 12);
    double total = 0;
    std::vector<double> widths;
    for (const auto& name : names) {
        cairo_text_extents_t ext;
        cairo_text_extents(cr, name.c_str(), &ext);
        widths.push_back(ext.x_advance);
        total += 22 + ext.x_advance + 14;
    }
    double x = std::max(f.left, f.right - total), y = f.top - 14;
    for (std::size_t i = 0; i < names.size(); ++i) {
        set_colour(cr, i);
        cairo_rectangle(cr, x, y - 5, 16, 10);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0, 0, 0);
        text_at(cr, names[i], x + 22, y, 0.0, 0.5);
        x += 22 + widths[i] + 14;
    }
}

/// Ticks and labels of the x axis.
void draw_x_ticks(cairo_t* cr, const Frame& f, const std::vector<double>& x_ticks) {
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_set_font_size(cr, 11);
    cairo_set_line_width(cr, 1.0);
    double xstep = x_ticks.size() > 1 ? x_ticks[1] - x_ticks[0] : 1.0;
    for (double t : x_ticks) {
        double x = f.map_x(t);
        cairo_move_to(cr, x, f.bottom);
        cairo_line_to(cr, x, f.bottom + 5);
        cairo_stroke(cr);
        text_at(cr, format_tick(t, xstep), x, f.bottom + 14, 0.5, 0.5);
    }
}

/// The plot area of a chart of `size` (margins for the axes, the title and, with two or more
/// series, the legend strip) and the data ranges it maps.
Frame chart_frame(PlotSize size, std::size_t series, const std::vector<double>& y_ticks,
                  double x_lo, double x_hi) {
    return Frame{70,
                 has_legend(series) ? 62.0 : 40.0,
                 static_cast<double>(size.width) - 30,
                 static_cast<double>(size.height) - 60,
                 y_ticks.front(),
                 y_ticks.back(),
                 x_lo,
                 x_hi};
}

using Painter = std::function<void(cairo_t*)>;

cairo_status_t write_to_file(void* closure, const unsigned char* data, unsigned int length) {
    auto* file = static_cast<AtomicFile*>(closure);
    return std::fwrite(data, 1, length, file->stream()) == length ? CAIRO_STATUS_SUCCESS
                                                                  : CAIRO_STATUS_WRITE_ERROR;
}

void check(cairo_status_t status, const std::filesystem::path& path) {
    if (status != CAIRO_STATUS_SUCCESS)
        throw IoError("cannot render " + path.string() + ": " + cairo_status_to_string(status));
}

using Surface = std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)>;

/// Paints on the new `surface` of `path`; throws IoError when the surface or the drawing fails.
void paint_on(cairo_surface_t* surface, const Painter& paint, const std::filesystem::path& path) {
    check(cairo_surface_status(surface), path);
    std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr(cairo_create(surface), cairo_destroy);
    paint(cr.get());
    check(cairo_status(cr.get()), path);
}

void render_both(const Painter& paint, const std::filesystem::path& prefix, PlotSize size) {
    if (size.width < 200 || size.height < 150)
        throw InvalidArgument("plot size must be at least 200x150");
    auto png_path = std::filesystem::path(prefix.string() + ".png");
    auto svg_path = std::filesystem::path(prefix.string() + ".svg");
    {
        Surface surface(cairo_image_surface_create(CAIRO_FORMAT_ARGB32, size.width, size.height),
                        cairo_surface_destroy);
        paint_on(surface.get(), paint, png_path);
        AtomicFile out(png_path);
        check(cairo_surface_write_to_png_stream(surface.get(), write_to_file, &out), png_path);
        out.commit();
    }
    {
        AtomicFile out(svg_path);
        Surface surface(
            cairo_svg_surface_create_for_stream(write_to_file, &out, size.width, size.height),
            cairo_surface_destroy);
        paint_on(surface.get(), paint, svg_path);
        cairo_surface_finish(surface.get());
        check(cairo_surface_status(surface.get()), svg_path);
        surface.reset();
        out.commit();
    }
}

double finite_or(double v, double fallback) { return std::isfinite(v) ? v : fallback; }

}  // namespace

std::vector<double> nice_ticks(double lo, double hi, int target) {
    if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
    if (hi < lo) std::swap(lo, hi);
    if (hi == lo) {
        double pad = lo == 0 ? 1.0 : std::fabs(lo) * 0.5;
        lo -= pad;
        hi += pad;
    }
    target = std::max(target, 2);
    double raw = (hi - lo) / target;
    double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double norm = raw / mag;
    double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
    double first = std::floor(lo / step + 1e-9) * step;
    double last = std::ceil(hi / step - 1e-9) * step;
    std::vector<double> ticks;
    for (double t = first; t <= last + step * 1e-6; t += step) ticks.push_back(t);
    if (ticks.size() < 2) ticks.push_back(first + step);
    return ticks;
}

void write_bar_chart(const BarChart& chart, const std::filesystem::path& prefix, PlotSize size) {
    if (chart.categories.empty() || chart.series.empty())
        throw InvalidArgument("bar chart '" + chart.title + "' has no categories or series");
    double y_max = 0, y_min = 0;
    for (const auto& s : chart.series) {
        if (s.values.size() != chart.categories.size())
            throw InvalidArgument("bar chart series '" + s.name + "' has " +
                                  std::to_string(s.values.size()) + " values for " +
                                  std::to_string(chart.categories.size()) + " categories");
        for (double v : s.values) {
            y_max = std::max(y_max, finite_or(v, 0));
            y_min = std::min(y_min, finite_or(v, 0));
        }
    }
    if (y_max == y_min) y_max = y_min + 1;
    auto ticks = nice_ticks(y_min, y_max);
    Painter paint = [&](cairo_t* cr) {
        const Frame f = chart_frame(size, chart.series.size(), ticks, 0, 1);
        draw_common(cr, chart.title, chart.x_label, chart.y_label, f, ticks, size.width,
                    size.height);
        std::size_t groups = chart.categories.size(), ns = chart.series.size();
        double group_w = (f.right - f.left) / static_cast<double>(groups);
        double bar_w = group_w * 0.8 / static_cast<double>(ns);
        double zero = f.map_y(std::clamp(0.0, f.y_lo, f.y_hi));
        for (std::size_t s = 0; s < ns; ++s) {
            set_colour(cr, s);
            for (std::size_t g = 0; g < groups; ++g) {
                double v = finite_or(chart.series[s].values[g], 0);
                double x = f.left + group_w * (static_cast<double>(g) + 0.1) +
                           bar_w * static_cast<double>(s);
                double y = f.map_y(v);
                cairo_rectangle(cr, x, std::min(y, zero), bar_w, std::fabs(zero - y));
                cairo_fill(cr);
            }
        }
        // Category labels: thin out so that they do not overlap.
        cairo_set_source_rgb(cr, 0, 0, 0);
        cairo_set_font_size(cr, 11);
        double widest = 0;
        for (const auto& c : chart.categories) {
            cairo_text_extents_t ext;
            cairo_text_extents(cr, c.c_str(), &ext);
            widest = std::max(widest, ext.x_advance);
        }
        std::size_t every = std::max<std::size_t>(
            1, static_cast<std::size_t>(std::ceil((widest + 6) / std::max(group_w, 1.0))));
        for (std::size_t g = 0; g < groups; g += every)
            text_at(cr, chart.categories[g], f.left + group_w * (static_cast<double>(g) + 0.5),
                    f.bottom + 12, 0.5, 0.5);
        draw_legend(cr, series_names(chart.series), f);
    };
    render_both(paint, prefix, size);
}

void write_line_chart(const LineChart& chart, const std::filesystem::path& prefix, PlotSize size) {
    if (chart.x.empty() || chart.series.empty())
        throw InvalidArgument("line chart '" + chart.title + "' has no points or series");
    double y_lo = INFINITY, y_hi = -INFINITY;
    for (const auto& s : chart.series) {
        if (s.values.size() != chart.x.size())
            throw InvalidArgument("line chart series '" + s.name + "' has " +
                                  std::to_string(s.values.size()) + " values for " +
                                  std::to_string(chart.x.size()) + " x values");
        if (!s.sd.empty() && s.sd.size() != s.values.size())
            throw InvalidArgument("line chart series '" + s.name + "': sd size mismatch");
        for (std::size_t i = 0; i < s.values.size(); ++i) {
            double v = s.values[i];
            if (!std::isfinite(v)) continue;
            double d = s.sd.empty() ? 0.0 : finite_or(s.sd[i], 0);
            y_lo = std::min(y_lo, v - d);
            y_hi = std::max(y_hi, v + d);
        }
    }
    auto y_ticks = nice_ticks(y_lo, y_hi);
    auto x_ticks = nice_ticks(chart.x.front(), chart.x.back());
    Painter paint = [&](cairo_t* cr) {
        const Frame f =
            chart_frame(size, chart.series.size(), y_ticks, x_ticks.front(), x_ticks.back());
        draw_common(cr, chart.title, chart.x_label, chart.y_label, f, y_ticks, size.width,
                    size.height);
        draw_x_ticks(cr, f, x_ticks);
        for (std::size_t s = 0; s < chart.series.size(); ++s) {
            const auto& series = chart.series[s];
            if (!series.sd.empty()) {  // band: upper edge forward, lower edge backward
                set_colour(cr, s, 0.2);
                bool started = false;
                for (std::size_t i = 0; i < chart.x.size(); ++i) {
                    if (!std::isfinite(series.values[i])) continue;
                    double y = f.map_y(series.values[i] + finite_or(series.sd[i], 0));
                    if (!started)
                        cairo_move_to(cr, f.map_x(chart.x[i]), y), started = true;
                    else
                        cairo_line_to(cr, f.map_x(chart.x[i]), y);
                }
                for (std::size_t i = chart.x.size(); i-- > 0;) {
                    if (!std::isfinite(series.values[i])) continue;
                    cairo_line_to(cr, f.map_x(chart.x[i]),
                                  f.map_y(series.values[i] - finite_or(series.sd[i], 0)));
                }
                cairo_close_path(cr);
                cairo_fill(cr);
            }
            set_colour(cr, s);
            cairo_set_line_width(cr, 2.0);
            bool started = false;
            for (std::size_t i = 0; i < chart.x.size(); ++i) {
                if (!std::isfinite(series.values[i])) {
                    started = false;
                    continue;
                }
                double x = f.map_x(chart.x[i]), y = f.map_y(series.values[i]);
                if (!started)
                    cairo_move_to(cr, x, y), started = true;
                else
                    cairo_line_to(cr, x, y);
            }
            cairo_stroke(cr);
            // Point markers for short series (also shows points isolated by NaN gaps).
            if (chart.x.size() <= 40) {
                for (std::size_t i = 0; i < chart.x.size(); ++i) {
                    if (!std::isfinite(series.values[i])) continue;
                    cairo_new_sub_path(cr);
                    cairo_arc(cr, f.map_x(chart.x[i]), f.map_y(series.values[i]), 3.0, 0, 2 * M_PI);
                }
                cairo_fill(cr);
            }
        }
        draw_legend(cr, series_names(chart.series), f);
    };
    render_both(paint, prefix, size);
}

void write_scatter_chart(const ScatterChart& chart, const std::filesystem::path& prefix,
                         PlotSize size) {
    double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
    for (const auto& s : chart.series) {
        if (s.x.size() != s.y.size())
            throw InvalidArgument("scatter chart series '" + s.name + "' has " +
                                  std::to_string(s.x.size()) + " x values for " +
                                  std::to_string(s.y.size()) + " y values");
        if (!s.labels.empty() && s.labels.size() != s.x.size())
            throw InvalidArgument("scatter chart series '" + s.name + "' has " +
                                  std::to_string(s.labels.size()) + " labels for " +
                                  std::to_string(s.x.size()) + " points");
        for (std::size_t i = 0; i < s.x.size(); ++i) {
            if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
            x_lo = std::min(x_lo, s.x[i]);
            x_hi = std::max(x_hi, s.x[i]);
            y_lo = std::min(y_lo, s.y[i]);
            y_hi = std::max(y_hi, s.y[i]);
        }
    }
    if (!(x_lo <= x_hi))
        throw InvalidArgument("scatter chart '" + chart.title + "' has no finite point");
    // 5 % padding so that no marker sits on an axis.
    const double x_pad = (x_hi - x_lo) * 0.05, y_pad = (y_hi - y_lo) * 0.05;
    auto y_ticks = nice_ticks(y_lo - y_pad, y_hi + y_pad);
    auto x_ticks = nice_ticks(x_lo - x_pad, x_hi + x_pad);
    Painter paint = [&](cairo_t* cr) {
        const Frame f =
            chart_frame(size, chart.series.size(), y_ticks, x_ticks.front(), x_ticks.back());
        std::vector<std::pair<double, double>> label_at;  // labels drawn so far (device units)
        draw_common(cr, chart.title, chart.x_label, chart.y_label, f, y_ticks, size.width,
                    size.height);
        draw_x_ticks(cr, f, x_ticks);
        for (std::size_t s = 0; s < chart.series.size(); ++s) {
            const auto& series = chart.series[s];
            set_colour(cr, s);
            if (series.connect) {
                cairo_set_line_width(cr, 1.5);
                bool started = false;
                for (std::size_t i = 0; i < series.x.size(); ++i) {
                    if (!std::isfinite(series.x[i]) || !std::isfinite(series.y[i])) {
                        started = false;
                        continue;
                    }
                    const double x = f.map_x(series.x[i]), y = f.map_y(series.y[i]);
                    if (!started)
                        cairo_move_to(cr, x, y), started = true;
                    else
                        cairo_line_to(cr, x, y);
                }
                cairo_stroke(cr);
            }
            // One filled path per marker (so that each point is one element of the SVG).
            for (std::size_t i = 0; i < series.x.size(); ++i) {
                if (!std::isfinite(series.x[i]) || !std::isfinite(series.y[i])) continue;
                cairo_new_path(cr);
                cairo_arc(cr, f.map_x(series.x[i]), f.map_y(series.y[i]), 4.0, 0, 2 * M_PI);
                cairo_close_path(cr);
                cairo_fill(cr);
            }
            if (!series.labels.empty()) {
                cairo_set_font_size(cr, 10);
                for (std::size_t i = 0; i < series.x.size(); ++i) {
                    if (!std::isfinite(series.x[i]) || !std::isfinite(series.y[i])) continue;
                    // Labels of coinciding points are stacked instead of overprinted.
                    const double x = f.map_x(series.x[i]) + 6;
                    double y = f.map_y(series.y[i]) - 6;
                    for (bool moved = true; moved;) {
                        moved = false;
                        for (const auto& [lx, ly] : label_at)
                            if (std::fabs(lx - x) < 40 && std::fabs(ly - y) < 10) {
                                y = ly - 11;
                                moved = true;
                            }
                    }
                    label_at.emplace_back(x, y);
                    text_at(cr, series.labels[i], x, y, 0.0, 0.5);
                }
            }
        }
        draw_legend(cr, series_names(chart.series), f);
    };
    render_both(paint, prefix, size);
}

}  // namespace plumb::debias
