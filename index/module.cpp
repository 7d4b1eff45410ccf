// Placeholder translation unit; replaced as the folder gains sources.
namespace plumb::index { int module_anchor = 0; }
