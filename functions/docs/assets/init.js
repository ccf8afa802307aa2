// Starts Swagger UI on the API's own OpenAPI document. Served by the API itself (no CDN).
window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: document.getElementById("swagger-ui").dataset.spec,
    dom_id: "#swagger-ui",
    deepLinking: true,
    persistAuthorization: false,
    displayRequestDuration: true,
    docExpansion: "list",
    filter: true,
    defaultModelsExpandDepth: 0,
  });
});
