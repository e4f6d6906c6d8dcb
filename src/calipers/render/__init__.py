"""Presentation primitives, knowing nothing of any scheme: number formatting and safe text for the
terminal (`terminal`), JSON documents without NaN written atomically (`json_report`), the jinja2
environment with autoescape and the page writer (`html`), matplotlib plots as inline SVG
(`plots`), and the templates and JSON Schemas of every report. Schemes, verdicts and the report
pages build their views from these."""
